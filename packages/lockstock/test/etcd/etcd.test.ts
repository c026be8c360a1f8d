import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer, httpRequest } from '@lockstock/servers';
import {
  InvalidLockOptionError,
  LockLostError,
  LockUpgradeError,
  PermitsMismatchError,
  UnsupportedLockKindError,
} from '../../src/index.js';
import { EtcdLockClient, EtcdSessionEndedError } from '../../src/etcd/index.js';
import { ETCD_ONE_SECOND_LEASES } from '../contract/backends.js';

let server: EtcdServer;
let admin: Etcd3;
const clients: EtcdLockClient[] = [];
const client = (sessionTtlSeconds = 10) => {
  const made = new EtcdLockClient({ hosts: server.endpoint, sessionTtlSeconds });
  clients.push(made);
  return made;
};
let unique = 0;
const lockName = (label: string) => `etcd-${label}-${process.pid}-${++unique}`;

/** The keys of a lock's queue (what etcd holds for it), oldest first. */
async function queue(name: string, family: string): Promise<string[]> {
  const dir = `ls/${encodeURIComponent(name)}/${family}/`;
  const kvs = await admin.getAll().prefix(dir).sort('Create', 'Ascend').keys();
  return kvs.map((key) => key.slice(dir.length));
}

/** An operator revokes the client's session lease (etcdctl lease revoke). */
async function revoke(of: EtcdLockClient): Promise<void> {
  const answer = await httpRequest(`${server.endpoint}/v3/lease/revoke`, {
    method: 'POST',
    body: { ID: of.sessionLeaseId },
  });
  expect(answer.status).toBe(200);
}

const aborted = (handle: { signal: AbortSignal }) =>
  handle.signal.aborted
    ? Promise.resolve(handle.signal.reason as unknown)
    : new Promise<unknown>((resolve) =>
        handle.signal.addEventListener('abort', () => resolve(handle.signal.reason), { once: true }),
      );

beforeAll(async () => {
  server = await EtcdServer.start({ args: ETCD_ONE_SECOND_LEASES });
  admin = new Etcd3({ hosts: server.endpoint });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin.close();
  await server.stop();
});

describe('etcd backend: what it offers and refuses', () => {
  it('refuses leaseMs, adopt and the counter semaphore, each with its reason', async () => {
    const c = client();
    const lock = c.mutex(lockName('refusals'));
    await expect(lock.acquire({ leaseMs: 1_000 })).rejects.toBeInstanceOf(InvalidLockOptionError);
    await expect(lock.adopt('someone', { fencingToken: 1 })).rejects.toBeInstanceOf(InvalidLockOptionError);
    expect(() => c.counterSemaphore('x', { permits: 2 })).toThrow(UnsupportedLockKindError);
    expect(c.backend.capabilities).toMatchObject({ leases: 'session', fencing: 'native', wakeUps: 'watch' });
    expect(() => new EtcdLockClient({ hosts: [] })).toThrow(InvalidLockOptionError);
    expect(() => new EtcdLockClient({ hosts: server.endpoint, sessionTtlSeconds: 0.5 })).toThrow(
      InvalidLockOptionError,
    );
  });

  it('fencing tokens are create revisions: increasing per lock, not consecutive', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('tokens');
    const first = await a.mutex(name).acquire();
    await a.mutex(lockName('other')).acquire(); // any write in etcd moves the revision on
    await first.release();
    const second = await b.mutex(name).acquire();
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken + 1);
    const info = await b.mutex(name).inspect();
    expect(info).toMatchObject({ held: true, holders: 1 });
    expect(info.remainingMs).toBeGreaterThan(0);
    expect(info.remainingMs).toBeLessThanOrEqual(10_000);
    await second.release();
    expect(await b.mutex(name).inspect()).toEqual({
      held: false,
      holders: 0,
      remainingMs: undefined,
      heldBy: [],
      waiting: 0,
    });
  });

  it('a waiter that gives up takes its key out of the queue', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('leave');
    const held = await a.mutex(name).acquire();
    await expect(b.mutex(name).acquire({ waitMs: 50 })).rejects.toThrow();
    await expect.poll(() => queue(name, 'mutex')).toHaveLength(1);
    await held.release();
    expect(await queue(name, 'mutex')).toEqual([]);
  });

  it('reentrant: the same owner re-enters with its token; counts live in the client', async () => {
    const c = client();
    const lock = c.reentrant(lockName('reentrant'));
    const outer = await lock.acquire({ owner: 'task' });
    const inner = await lock.acquire({ owner: 'task' });
    expect(inner.fencingToken).toBe(outer.fencingToken);
    expect(await lock.holdCount('task')).toBe(2);
    expect(await inner.release()).toBe('still_held');
    expect(await lock.isLocked()).toBe(true);
    expect(await outer.release()).toBe('released');
    expect(await lock.holdCount('task')).toBe(0);
  });
});

describe('etcd read-write lock (the recipe in one key per owner)', () => {
  it('readers share; a waiting writer keeps later readers out; upgrade refused', async () => {
    const [a, b, c] = [client(), client(), client()];
    const name = lockName('rw');
    const r1 = await a.readWrite(name).read.acquire({ owner: 'r1' });
    const r2 = await b.readWrite(name).read.acquire({ owner: 'r2', waitMs: 1_000 });
    expect(await a.readWrite(name).read.inspect()).toMatchObject({ held: true, holders: 2 });
    // The read holder asking for the write side would wait for itself.
    await expect(a.readWrite(name).write.acquire({ owner: 'r1' })).rejects.toBeInstanceOf(LockUpgradeError);
    expect(await a.readWrite(name).write.tryAcquire({ owner: 'r1' })).toBeUndefined();
    const writer = c.readWrite(name).write.acquire({ owner: 'w', waitMs: 10_000 });
    await expect.poll(() => queue(name, 'rw')).toHaveLength(3);
    // A reader arriving after the waiting writer waits for it.
    const late = a.readWrite(name).read.acquire({ owner: 'late', waitMs: 10_000 });
    await expect.poll(() => queue(name, 'rw')).toHaveLength(4);
    await Promise.all([r1.release(), r2.release()]);
    const w = await writer;
    expect(await c.readWrite(name).write.isLocked()).toBe(true);
    expect(await a.readWrite(name).read.isLocked()).toBe(false); // 'late' still waits
    await w.release();
    const l = await late;
    expect(l.fencingToken).toBeGreaterThan(w.fencingToken);
    await l.release();
  });

  it('a waiting writer keeps out a reader that comes the moment it is seen queued (the race, 20 times)', async () => {
    const [a, b, c] = [client(), client(), client()];
    // Sessions first: a client's first lock also creates its session.
    await Promise.all([a, b, c].map(async (x) => (await x.mutex(lockName('warm')).acquire()).release()));
    for (let round = 0; round < 20; round++) {
      const name = lockName('rw-race');
      const reader = await a.readWrite(name).read.acquire({ owner: 'r' });
      const dir = `ls/${encodeURIComponent(name)}/rw/`;
      const before = Number((await admin.getAll().prefix(dir).exec()).header.revision);
      const writer = b.readWrite(name).write.acquire({ owner: 'w', waitMs: 10_000 });
      // As soon as an operator sees the writer's key, a reader of another client asks.
      let seen;
      while ((seen = await admin.getAll().prefix(dir).sort('Create', 'Ascend').exec()).kvs.length < 2) {
        // each look is a round trip to the server: no sleep needed
      }
      const late = await c.readWrite(name).read.tryAcquire({ owner: 'late', waitMs: 50 });
      if (late !== undefined) await late.release();
      await reader.release();
      await (await writer).release();
      expect(late, `round ${round}: a reader passed the waiting writer`).toBeUndefined();
      // The writer's first try put the key it waited with (the next write after \`before\`): a try
      // that withdrew and queued again would have left a gap a later reader could slip into.
      expect(Number(seen.kvs[1]!.create_revision), `round ${round}: the writer queued twice`).toBe(
        before + 1,
      );
    }
  });

  it('downgrade keeps the writer’s place: a writer queued meanwhile waits for the read hold', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('downgrade');
    const write = await a.readWrite(name).write.acquire({ owner: 'owner' });
    const read = await a.readWrite(name).read.acquire({ owner: 'owner' });
    expect(read.fencingToken).toBe(write.fencingToken); // the same key
    const second = b.readWrite(name).write.acquire({ owner: 'second', waitMs: 10_000 });
    await expect.poll(() => queue(name, 'rw')).toHaveLength(2);
    expect(await write.release()).toBe('released');
    // The key turned into a reader's; the queued writer still waits for it.
    expect(await a.readWrite(name).read.inspect()).toMatchObject({ held: true, holders: 1 });
    expect(await b.readWrite(name).write.isLocked()).toBe(false);
    expect((await queue(name, 'rw'))[0]).toMatch(/\/owner$/); // still first: the writer waits behind it
    await read.release();
    const w = await second;
    expect(w.fencingToken).toBeGreaterThan(write.fencingToken);
    await w.release();
  });
});

describe('etcd semaphore and latch', () => {
  it('N permits; the stored count is enforced; setPermits lets waiters in', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('semaphore');
    const sem = a.semaphore(name, { permits: 2 });
    const held = [await sem.acquire(), await sem.acquire()];
    expect(await sem.available()).toBe(0);
    expect(await b.semaphore(name, { permits: 2 }).tryAcquire()).toBeUndefined();
    await expect(b.semaphore(name, { permits: 3 }).acquire()).rejects.toBeInstanceOf(PermitsMismatchError);
    const waiting = b.semaphore(name, { permits: 2 }).acquire({ waitMs: 10_000 });
    await expect.poll(() => queue(name, 'semaphore/q')).toHaveLength(3);
    await held[1]!.release(); // one of two holders: the waiter is admitted
    const third = await waiting;
    expect(third.fencingToken).toBeGreaterThan(held[0]!.fencingToken);
    await Promise.all([held[0]!.release(), third.release()]);
    await sem.setPermits(3);
    await expect(b.semaphore(name, { permits: 2 }).acquire()).rejects.toBeInstanceOf(PermitsMismatchError);
    const three = b.semaphore(name, { permits: 3 });
    const all = await Promise.all([three.acquire(), three.acquire(), three.acquire()]);
    expect(await three.available()).toBe(0);
    await Promise.all(all.map((h) => h.release()));
  });

  it('a latch releases every waiter of every client at zero', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('latch');
    expect(await a.countDownLatch(name).trySetCount(2)).toBe(true);
    expect(await b.countDownLatch(name).trySetCount(5)).toBe(false);
    const waits = [
      a.countDownLatch(name).wait({ waitMs: 10_000 }),
      b.countDownLatch(name).wait({ waitMs: 10_000 }),
    ];
    expect(await a.countDownLatch(name).countDown()).toBe(1);
    expect(await b.countDownLatch(name).count()).toBe(1);
    expect(await b.countDownLatch(name).countDown()).toBe(0);
    expect(await Promise.all(waits)).toEqual([true, true]);
    expect(await a.countDownLatch(name).wait({ waitMs: 0 })).toBe(true);
  });
});

describe('etcd session: lost at once, for every hold', () => {
  it('a revoked lease aborts every hold of the client at once; the next acquire opens a new session', async () => {
    const c = client();
    const [mutex, reader, permit] = [
      await c.mutex(lockName('s1')).acquire(),
      await c.readWrite(lockName('s2')).read.acquire(),
      await c.semaphore(lockName('s3'), { permits: 1 }).acquire(),
    ];
    const lost: string[] = [];
    c.on('lost', (event) => lost.push(event.reason));
    const before = c.sessionLeaseId;
    await revoke(c);
    const reasons = await Promise.all([mutex, reader, permit].map(aborted));
    for (const reason of reasons) {
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toBe('session_lost');
      expect((reason as LockLostError).cause).toBeInstanceOf(EtcdSessionEndedError);
    }
    expect(lost).toEqual(['session_lost', 'session_lost', 'session_lost']);
    expect(await mutex.release()).toBe('expired');
    const again = await c.mutex(lockName('s1')).acquire();
    expect(c.sessionLeaseId).not.toBe(before);
    await Promise.all([again.release(), reader.release(), permit.release()]);
  });

  it('a waiter whose session is revoked queues again and still gets the lock', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('requeue');
    const held = await a.mutex(name).acquire();
    const waiting = b.mutex(name).acquire({ waitMs: 10_000 });
    await expect.poll(() => queue(name, 'mutex')).toHaveLength(2);
    const [, before] = await queue(name, 'mutex');
    await revoke(b);
    await expect.poll(() => queue(name, 'mutex')).toHaveLength(2); // back in, with a new key
    expect((await queue(name, 'mutex'))[1]).not.toBe(before);
    await held.release();
    await (await waiting).release();
  });

  it('etcd frozen past the TTL: the holder learns it from its own clock, not from etcd', async () => {
    const c = client(1);
    const handle = await c.mutex(lockName('frozen')).acquire();
    server.pause();
    try {
      const reason = (await aborted(handle)) as LockLostError;
      expect(reason.reason).toBe('session_lost');
      expect((reason.cause as EtcdSessionEndedError).why).toBe('unreachable');
    } finally {
      server.resume();
    }
    await handle.release();
  });
});

describe('etcd fenced writes and force unlock', () => {
  it('guardedPut commits only while the hold’s key is its own', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('guarded');
    const data = `data-${name}`;
    const first = await a.mutex(name).acquire();
    expect(await a.guardedPut(first, data, 'one')).toBe(true);
    expect(await a.forceUnlock(a.mutex(name))).toBe(true); // an operator frees it behind its back
    const second = await b.mutex(name).acquire({ waitMs: 5_000 });
    expect(await a.guardedPut(first, data, 'stale')).toBe(false); // etcd refused it
    expect(await b.guardedPut(second, data, 'two')).toBe(true);
    expect(await admin.get(data).string()).toBe('two');
    expect(await first.release()).toBe('expired');
    await second.release();
    expect(await b.guardedPut(second, data, 'released')).toBe(false);
  });
});

describe('etcd election', () => {
  it('one leader at a time, its token the key’s revision; observers see the changes', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('election');
    const seen: Array<string | undefined> = [];
    const stop = b.election(name).observe((leader) => seen.push(leader?.value), { intervalMs: 20 });
    const first = await a.election(name).campaign('a');
    const second = b.election(name).campaign('b', { waitMs: 10_000 });
    await expect.poll(() => queue(name, 'election')).toHaveLength(2); // b is queued behind a
    expect(await b.election(name).leader()).toEqual({ value: 'a', fencingToken: first.fencingToken });
    await first.resign();
    const term = await second;
    expect(term.fencingToken).toBeGreaterThan(first.fencingToken);
    await expect.poll(() => seen).toEqual([undefined, 'a', 'b']);
    await term.resign();
    stop();
  });

  it('a campaign whose session ends is rejected (Go’s Campaign would go on waiting, then win keyless)', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('campaign-lost');
    const leader = await a.election(name).campaign('a');
    const campaign = b
      .election(name)
      .campaign('b')
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    await expect.poll(() => queue(name, 'election')).toHaveLength(2);
    await revoke(b);
    const error = await campaign;
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('session_lost');
    await leader.resign();
    expect(await b.election(name).leader()).toBeUndefined();
  });

  it('a term ends with its session: its signal aborts', async () => {
    const c = client();
    const term = await c.election(lockName('term')).campaign('x');
    await revoke(c);
    expect(((await aborted(term)) as LockLostError).reason).toBe('session_lost');
  });
});
