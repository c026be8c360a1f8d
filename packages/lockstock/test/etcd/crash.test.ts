import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer } from '@lockstock/servers';
import { EtcdLockClient } from '../../src/etcd/index.js';
import { ETCD_ONE_SECOND_LEASES } from '../contract/backends.js';
import { killAndTime, useFixtures } from '../helpers/crash.js';

/**
 * The etcd backend across OS processes, with real faults: SIGKILLed holders, waiters and leaders,
 * a holder and a candidate paused (SIGSTOP) past their session's TTL. Bounds are the TTL plus what
 * etcd takes to expire a lease (it looks every 500 ms), with room for a loaded machine; the checks
 * are on what the processes and etcd recorded.
 */
let server: EtcdServer;
let admin: Etcd3;
const clients: EtcdLockClient[] = [];
const client = (sessionTtlSeconds = 10) => {
  const made = new EtcdLockClient({ hosts: server.endpoint, sessionTtlSeconds });
  clients.push(made);
  return made;
};
const backend = (sessionTtlSeconds: number) => ({
  kind: 'etcd',
  hosts: [server.endpoint],
  sessionTtlSeconds,
});
let unique = 0;
const lockName = (label: string) => `crash-${label}-${process.pid}-${++unique}`;
/** etcd expires a lease at most this long after its TTL ran out (its lessor looks every 500 ms). */
const EXPIRY_SLACK_MS = 1_500;

async function queue(name: string, family: string): Promise<string[]> {
  const dir = `ls/${encodeURIComponent(name)}/${family}/`;
  return (await admin.getAll().prefix(dir).sort('Create', 'Ascend').keys()).map((k) => k.slice(dir.length));
}

const fixtures = useFixtures();
const fork = (name: string, args: object) => fixtures.fork(name, args);

beforeAll(async () => {
  server = await EtcdServer.start({ args: ETCD_ONE_SECOND_LEASES });
  admin = new Etcd3({ hosts: server.endpoint });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin.close();
  await server.stop();
});

describe('etcd locks across OS processes', () => {
  it('a SIGKILLed holder’s lock is free once its session TTL has run out', async () => {
    for (const ttl of [1, 2]) {
      const name = lockName(`killed-holder-${ttl}`);
      const holder = fork('holder.mjs', {
        backend: backend(ttl),
        subject: 'mutex',
        name,
        mode: 'session',
        holds: 1,
      });
      const { tokens } = await holder.next('acquired');
      const waiting = client()
        .mutex(name)
        .acquire({ waitMs: ttl * 1_000 + 5_000 });
      await expect.poll(() => queue(name, 'mutex')).toHaveLength(2);
      const { result: handle, freedAfterMs } = await killAndTime(holder, waiting);
      expect(handle.fencingToken).toBeGreaterThan((tokens as number[])[0]!);
      expect(freedAfterMs).toBeLessThanOrEqual(ttl * 1_000 + EXPIRY_SLACK_MS);
      await handle.release();
    }
  });

  it('a SIGKILLed waiter does not stall the queue: the next waiter gets the lock after its TTL', async () => {
    const name = lockName('killed-waiter');
    const holder = await client().mutex(name).acquire();
    const dead = fork('waiter.mjs', { backend: backend(1), subject: 'mutex', name });
    await dead.next('waiting');
    await expect.poll(() => queue(name, 'mutex')).toHaveLength(2);
    const next = client().mutex(name).acquire({ waitMs: 10_000 });
    await expect.poll(() => queue(name, 'mutex')).toHaveLength(3);
    dead.kill('SIGKILL');
    await dead.exited;
    const killedAt = performance.now();
    await holder.release(); // the live waiter's predecessor is now the dead one's key
    const handle = await next;
    expect(performance.now() - killedAt).toBeLessThanOrEqual(1_000 + EXPIRY_SLACK_MS);
    expect(await queue(name, 'mutex')).toHaveLength(1); // the dead waiter's key went with its lease
    await handle.release();
  });

  it('a holder paused past its TTL learns it lost the lock through its signal; etcd refuses its write', async () => {
    const name = lockName('paused');
    const key = `data-${name}`;
    const paused = fork('etcd-paused-holder.mjs', { hosts: [server.endpoint], name, key });
    const { token: pausedToken } = await paused.next('holding');
    paused.kill('SIGSTOP');
    // Another client asks at once: it gets the lock when the paused holder's lease has expired.
    const second = await client().mutex(name).acquire({ waitMs: 10_000 });
    expect(second.fencingToken).toBeGreaterThan(pausedToken as number);
    expect(await clients.at(-1)!.guardedPut(second, key, 'from second')).toBe(true);
    paused.kill('SIGCONT');
    paused.send({ type: 'write' });
    const done = await paused.next('done');
    expect(done.reason).toBe('session_lost'); // its signal aborted once resumed
    expect(['unreachable', 'lease_gone']).toContain(done.why);
    expect(done.accepted).toBe(false); // If(CreateRevision(its key) == its token) failed: the key is gone
    expect(done.outcome).toBe('expired');
    expect(await admin.get(key).string()).toBe('from second');
    await second.release();
  });

  it('a release wakes exactly one waiter: its successor in the queue, in arrival order', async () => {
    const name = lockName('wake-ups');
    const holder = await client().mutex(name).acquire();
    const waiters = Array.from({ length: 4 }, () =>
      fork('etcd-waiter.mjs', { hosts: [server.endpoint], name }),
    );
    await Promise.all(waiters.map((w) => w.next('ready')));
    // Queued one after the other, so the queue's order is known.
    for (const waiter of waiters) {
      waiter.send({ type: 'go' });
      await waiter.next('queued');
    }
    expect(await queue(name, 'mutex')).toHaveLength(1 + waiters.length);
    await holder.release();
    const acquired = await Promise.all(waiters.map((w) => w.next('acquired')));
    // Between being queued and holding, each waiter made one request: the look that found it first.
    // One release, one waiter woken, one request — no herd.
    expect(acquired.map((a) => a.wakeRequests)).toEqual(waiters.map(() => 1));
    const tokens = acquired.map((a) => a.token as number);
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y)); // granted in arrival order
    expect(tokens[0]).toBeGreaterThan(holder.fencingToken);
  });
});

describe('etcd leader election across OS processes', () => {
  it('a SIGKILLed leader is replaced by a candidate in another process, with a greater token', async () => {
    const name = lockName('election');
    const leader = fork('candidate.mjs', { backend: backend(1), name, value: 'fixture' });
    const { fencingToken } = await leader.next('leading');
    const c = client();
    expect(await c.election(name).leader()).toEqual({ value: 'fixture', fencingToken });
    const successor = c.election(name).campaign('successor', { waitMs: 10_000 });
    await expect.poll(() => queue(name, 'election')).toHaveLength(2);
    leader.kill('SIGKILL');
    const term = await successor;
    expect(term.fencingToken).toBeGreaterThan(fencingToken as number);
    expect(await c.election(name).leader()).toEqual({ value: 'successor', fencingToken: term.fencingToken });
    await term.resign();
  });

  it('a campaign paused past its TTL is rejected when resumed, though nobody is ahead of it any more', async () => {
    const name = lockName('paused-campaign');
    const c = client();
    const leading = await c.election(name).campaign('leader');
    const candidate = fork('etcd-campaigner.mjs', { backend: backend(1), name, value: 'paused' });
    await expect.poll(() => queue(name, 'election')).toHaveLength(2);
    candidate.kill('SIGSTOP');
    await expect.poll(() => queue(name, 'election'), { timeout: 5_000 }).toHaveLength(1); // its key expired
    // The key it waited on goes too: Go's Campaign would now return, leading without a key.
    await leading.resign();
    candidate.kill('SIGCONT');
    const outcome = await candidate.next('outcome');
    expect(outcome).toMatchObject({ outcome: 'LockLostError', reason: 'session_lost' });
    expect(await c.election(name).leader()).toBeUndefined();
  });
});
