import { hostname } from 'node:os';
import { describe, expect, it, vi } from 'vitest';
import { fileURLToPath } from 'node:url';
import { InvalidLockOptionError } from '../../src/index.js';
import { forkFixtures } from '../../src/testing/processes.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

// Holder metadata is opt-in on Redis (`holderMetadata: true`): it costs a write per acquire. What is
// checked here is what Redis holds, read with a plain connection, not what the client believes.
describe('Redis holder metadata', () => {
  it('off by default: no record is written, inspect() names the owner only', async () => {
    const locks = env.locks();
    expect(locks.backend.capabilities.holderMetadata ?? []).toEqual([]);
    const mutex = await locks.mutex('hm-off').acquire({ label: 'nightly', leaseMs: 10_000 });
    expect(await env.redis.exists('ls:{hm-off}:holder')).toBe(0);
    expect((await locks.mutex('hm-off').inspect()).heldBy).toEqual([{ owner: mutex.owner }]);
    await mutex.extend(20_000);
    expect(await env.redis.pttl('ls:{hm-off}')).toBeGreaterThan(10_000);
    expect(await env.redis.get('ls:{hm-off}')).toBe(mutex.owner); // the extend left the lock key alone
    expect(await mutex.release()).toBe('released');
    expect(await env.redis.exists('ls:{hm-off}')).toBe(0);

    const reentrant = await locks.reentrant('hm-off-r').acquire({ label: 'nightly' });
    expect(await env.redis.hexists('ls:{hm-off-r}', '\0h')).toBe(0);
    await reentrant.release();
  });

  it('on: the record lives beside the mutex with its lease, and goes with the release', async () => {
    const locks = env.locks({ holderMetadata: true });
    expect(locks.backend.capabilities.holderMetadata).toEqual([
      'mutex',
      'reentrant',
      'spin',
      'fair',
      'read-write',
      'semaphore',
    ]);
    const before = Date.now();
    const hold = await locks.mutex('hm-on').acquire({ label: 'nightly', leaseMs: 10_000 });
    const record = JSON.parse((await env.redis.get('ls:{hm-on}:holder')) ?? 'null') as unknown;
    expect(record).toMatchObject({ owner: hold.owner, host: hostname(), pid: process.pid, label: 'nightly' });
    expect(await env.redis.pttl('ls:{hm-on}:holder')).toBeGreaterThan(0);
    await hold.extend(60_000);
    expect(await env.redis.pttl('ls:{hm-on}:holder')).toBeGreaterThan(10_000); // follows the lease
    const [holder] = (await env.locks().mutex('hm-on').inspect()).heldBy ?? [];
    expect(holder!.acquiredAt).toBeGreaterThanOrEqual(before);
    expect(holder).toMatchObject({ owner: hold.owner, label: 'nightly', pid: process.pid });
    await hold.release();
    expect(await env.redis.exists('ls:{hm-on}', 'ls:{hm-on}:holder')).toBe(0);
  });

  it('a client without the option reads records others stored, and writes none itself', async () => {
    const on = env.locks({ holderMetadata: true });
    const off = env.locks();
    const first = await on.mutex('hm-mixed').acquire({ label: 'with-record' });
    expect(await off.mutex('hm-mixed').tryAcquire()).toBeUndefined();
    // Its inspect() still reads the record the other client stored.
    const [seen] = (await off.mutex('hm-mixed').inspect()).heldBy ?? [];
    expect(seen).toMatchObject({ owner: first.owner, label: 'with-record', pid: process.pid });
    await first.release();
    // Two holds of the client without records, the second handed over by the first's release.
    const a = await off.mutex('hm-mixed').acquire();
    const waiting = off.mutex('hm-mixed').acquire();
    await a.release();
    const b = await waiting;
    expect(await env.redis.exists('ls:{hm-mixed}:holder')).toBe(0);
    expect((await on.mutex('hm-mixed').inspect()).heldBy).toEqual([{ owner: b.owner }]);
    await b.release();
  });

  it('refuses a holderMetadata option that is not a boolean', () => {
    expect(() => env.locks({ holderMetadata: 'yes' as never })).toThrow(InvalidLockOptionError);
  });

  // Fair, read-write and leased semaphore (issue 37): each holder's record lives where its hold does —
  // a field '\0h' of the fair lock's or writer's hash, the tail of a reader's field, a key of its own
  // per semaphore permit — and is written only by a client with the option on.
  const record = (text: string | null | undefined) => JSON.parse(text ?? 'null') as Record<string, unknown>;
  const readerRecord = (value: string | null) => (value ?? '').replace(/^\d+ \d+ \d+ ?/, '');

  it('off: a fair, read, write or semaphore hold writes no record, a queued fair waiter neither', async () => {
    const off = env.locks();
    const fair = await off.fair('hm-k-off').acquire({ label: 'nightly' });
    const queued = off.fair('hm-k-off').acquire({ label: 'nightly' });
    await vi.waitFor(async () => expect(await env.redis.hlen('ls:{hm-k-off}:fair:waiters')).toBe(1));
    expect(await env.redis.hexists('ls:{hm-k-off}:fair', '\0h')).toBe(0);
    expect(await env.redis.hvals('ls:{hm-k-off}:fair:waiters')).toEqual([expect.stringMatching(/^\S+ \d+$/)]);
    await fair.release();
    const next = await queued; // handed over by the release's script: no record either
    expect(await env.redis.hexists('ls:{hm-k-off}:fair', '\0h')).toBe(0);
    expect((await off.fair('hm-k-off').inspect()).heldBy).toEqual([{ owner: next.owner }]);
    await next.release();

    const write = await off.readWrite('hm-w-off').write.acquire({ label: 'nightly' });
    expect(await env.redis.hexists('ls:{hm-w-off}:rw:writer', '\0h')).toBe(0);
    expect((await off.readWrite('hm-w-off').write.inspect()).heldBy).toEqual([{ owner: write.owner }]);
    await write.release();
    const read = await off.readWrite('hm-w-off').read.acquire({ label: 'nightly' });
    expect(await env.redis.hget('ls:{hm-w-off}:rw:readers', read.owner)).toMatch(/^\d+ \d+ \d+$/);
    expect((await off.readWrite('hm-w-off').read.inspect()).heldBy).toEqual([{ owner: read.owner }]);
    await read.release();

    const permit = await off.semaphore('hm-s-off', { permits: 2 }).acquire({ label: 'nightly' });
    expect(await env.redis.keys('ls:{hm-s-off}:semaphore:holder:*')).toEqual([]);
    expect((await off.semaphore('hm-s-off', { permits: 2 }).inspect()).heldBy).toEqual([
      { owner: permit.owner },
    ]);
    await permit.release();
  });

  it('on: a fair lock keeps the holder record in its hash, a waiter keeps its own, handed over with the lock', async () => {
    const on = env.locks({ holderMetadata: true });
    const first = await on.fair('hm-fair').acquire({ label: 'first', leaseMs: 10_000 });
    expect(record(await env.redis.hget('ls:{hm-fair}:fair', '\0h'))).toMatchObject({
      owner: first.owner,
      pid: process.pid,
      label: 'first',
    });
    const queued = on.fair('hm-fair').acquire({ label: 'second', leaseMs: 10_000 });
    await vi.waitFor(async () => expect(await env.redis.hlen('ls:{hm-fair}:fair:waiters')).toBe(1));
    await first.release(); // the waiter is this client's: fair-release.lua grants it the lock itself
    const second = await queued;
    expect(record(await env.redis.hget('ls:{hm-fair}:fair', '\0h'))).toMatchObject({
      owner: second.owner,
      label: 'second',
    });
    const [seen] = (await env.locks().fair('hm-fair').inspect()).heldBy ?? [];
    expect(seen).toMatchObject({ owner: second.owner, label: 'second', host: hostname() });
    await second.release();
    expect(await env.redis.exists('ls:{hm-fair}:fair')).toBe(0); // the record went with the hash
  });

  it('on: the writer record is in its hash, each reader record in its own field, gone with the hold', async () => {
    const on = env.locks({ holderMetadata: true });
    const rw = on.readWrite('hm-rw');
    const writer = await rw.write.acquire({ label: 'writer' });
    expect(record(await env.redis.hget('ls:{hm-rw}:rw:writer', '\0h'))).toMatchObject({
      owner: writer.owner,
      label: 'writer',
    });
    expect((await env.locks().readWrite('hm-rw').write.inspect()).heldBy).toEqual([
      expect.objectContaining({ owner: writer.owner, label: 'writer', pid: process.pid }),
    ]);
    await writer.release();
    expect(await env.redis.exists('ls:{hm-rw}:rw:writer')).toBe(0);

    const [a, b] = await Promise.all([rw.read.acquire({ label: 'a' }), rw.read.acquire({ label: 'b' })]);
    for (const [hold, label] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      const field = await env.redis.hget('ls:{hm-rw}:rw:readers', hold.owner);
      expect(record(readerRecord(field))).toMatchObject({ owner: hold.owner, label });
    }
    const heldBy = (await env.locks().readWrite('hm-rw').read.inspect()).heldBy ?? [];
    expect([...heldBy].sort((x, y) => String(x.label).localeCompare(String(y.label)))).toEqual([
      expect.objectContaining({ owner: a.owner, label: 'a' }),
      expect.objectContaining({ owner: b.owner, label: 'b' }),
    ]);
    // Re-entry and extend rewrite the field: the record stays.
    const again = await rw.read.acquire({ owner: a.owner, label: 'not-kept' });
    expect(await env.redis.hget('ls:{hm-rw}:rw:readers', a.owner)).toMatch(/^2 /); // re-entered in Redis
    await a.extend(60_000);
    expect(record(readerRecord(await env.redis.hget('ls:{hm-rw}:rw:readers', a.owner)))).toMatchObject({
      label: 'a',
    });
    await again.release();
    expect(record(readerRecord(await env.redis.hget('ls:{hm-rw}:rw:readers', a.owner)))).toMatchObject({
      label: 'a',
    });
    await a.release();
    expect(await env.redis.hexists('ls:{hm-rw}:rw:readers', a.owner)).toBe(0);
    expect((await env.locks().readWrite('hm-rw').read.inspect()).heldBy).toEqual([
      expect.objectContaining({ owner: b.owner, label: 'b' }),
    ]);
    await b.release();
  });

  it('on: a reader whose lease ended is not shown, and the next writer drops its field and record', async () => {
    const on = env.locks({ holderMetadata: true });
    const reader = await on.readWrite('hm-rw-end').read.acquire({ label: 'short', leaseMs: 200 });
    const key = 'ls:{hm-rw-end}:rw:readers';
    expect(readerRecord(await env.redis.hget(key, reader.owner))).not.toBe('');
    await vi.waitFor(
      async () => expect((await env.locks().readWrite('hm-rw-end').read.inspect()).heldBy).toEqual([]),
      {
        timeout: 10_000,
      },
    );
    const writer = await on.readWrite('hm-rw-end').write.acquire();
    expect(await env.redis.hexists(key, reader.owner)).toBe(0);
    await writer.release();
  });

  it('on: each semaphore permit keeps its record under a key with its lease, gone on release or expiry', async () => {
    const on = env.locks({ holderMetadata: true });
    const sem = () => on.semaphore('hm-sem', { permits: 2 });
    const key = (owner: string) => `ls:{hm-sem}:semaphore:holder:${owner}`;
    const a = await sem().acquire({ label: 'a', leaseMs: 10_000 });
    const b = await sem().acquire({ label: 'b', leaseMs: 200 });
    expect(record(await env.redis.get(key(a.owner)))).toMatchObject({ owner: a.owner, label: 'a' });
    expect(await env.redis.pttl(key(a.owner))).toBeGreaterThan(200);
    expect(await env.redis.pttl(key(b.owner))).toBeLessThanOrEqual(200); // b's lease, not a's
    await a.extend(60_000);
    expect(await env.redis.pttl(key(a.owner))).toBeGreaterThan(10_000); // follows the lease
    // b's lease ends: its record goes by itself, and inspect() names a only.
    await vi.waitFor(async () => expect(await env.redis.exists(key(b.owner))).toBe(0), { timeout: 10_000 });
    await vi.waitFor(
      async () =>
        expect((await env.locks().semaphore('hm-sem', { permits: 2 }).inspect()).heldBy).toEqual([
          expect.objectContaining({ owner: a.owner, label: 'a', pid: process.pid }),
        ]),
      { timeout: 10_000 },
    );
    // A waiter of the same client gets a's permit from the release's script, with its own record.
    const c = await sem().acquire({ label: 'c' });
    const waiting = sem().acquire({ label: 'd' });
    await vi.waitFor(async () => expect(await env.redis.exists('ls:{hm-sem}:semaphore:queue')).toBe(1));
    await a.release();
    const d = await waiting;
    expect(await env.redis.exists(key(a.owner))).toBe(0);
    expect(record(await env.redis.get(key(d.owner)))).toMatchObject({ owner: d.owner, label: 'd' });
    await Promise.all([c.release(), d.release()]);
    expect(await env.redis.keys('ls:{hm-sem}:semaphore:holder:*')).toEqual([]);
  });

  // The contract's cross-process inspect case leaves readers out (cases.ts: "its holders are shown by
  // the lock they hold"); here three readers of another OS process are named with their records.
  it('on: inspect() names each reader of another OS process, with its pid, host and label', async () => {
    const name = 'hm-rw-process';
    const backend = {
      module: fileURLToPath(new URL('../contract/subjects.mjs', import.meta.url)), // connect(config)
      config: { kind: 'redis', url: env.server.url, holderMetadata: true },
    };
    const hold = { backend, subject: 'read', name, mode: 'watchdog', ms: 30_000, holds: 3, label: 'reader' };
    const [holder] = forkFixtures('holder', [JSON.stringify(hold)]);
    try {
      const { pid, host } = (await holder!.next('acquired')) as unknown as { pid: number; host: string };
      expect(pid).not.toBe(process.pid);
      const heldBy = (await env.locks().readWrite(name).read.inspect()).heldBy ?? [];
      expect([...heldBy].sort((x, y) => x.owner.localeCompare(y.owner))).toEqual(
        [0, 1, 2].map((i) =>
          expect.objectContaining({ owner: `holder-${pid}-${i}`, pid, host, label: 'reader' }),
        ),
      );
    } finally {
      holder!.kill('SIGKILL');
    }
  });
});
