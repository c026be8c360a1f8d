import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { InvalidLockOptionError } from '../../src/index.js';
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
    expect(locks.backend.capabilities.holderMetadata).toEqual(['mutex', 'reentrant', 'spin']);
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
});
