import { describe, expect, it } from 'vitest';
import {
  InvalidLockOptionError,
  LockAbortedError,
  LockClientClosedError,
  LockLostError,
  LockTimeoutError,
} from '../../src/index.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('mutex', () => {
  it('acquires with SET NX semantics and releases only its own lock', async () => {
    const locks = env.locks();
    const lock = locks.mutex('m-basic');
    const handle = await lock.acquire({ leaseMs: 10_000 });
    expect(await env.redis.get('ls:{m-basic}')).toBe(handle.owner);
    expect(await lock.isLocked()).toBe(true);
    const info = await lock.inspect();
    expect(info).toMatchObject({ held: true, holders: 1 });
    expect(info.remainingMs).toBeGreaterThan(0);
    expect(info.remainingMs).toBeLessThanOrEqual(10_000);
    expect(await lock.tryAcquire()).toBeUndefined();
    expect(await handle.release()).toBe('released');
    expect(await handle.release()).toBe('released'); // idempotent: the first outcome
    expect(await lock.isLocked()).toBe(false);
    expect(await lock.inspect()).toEqual({ held: false, holders: 0, remainingMs: undefined, heldBy: [] });
  });

  it('release reports not_owner and leaves the new holder alone; expired when nothing is left', async () => {
    const lock = env.locks().mutex('m-owner');
    const stale = await lock.acquire({ leaseMs: 10_000 });
    await env.redis.set('ls:{m-owner}', 'someone-else', 'PX', 10_000); // stale's lease "ran out", B took it
    expect(await stale.release()).toBe('not_owner');
    expect(await env.redis.get('ls:{m-owner}')).toBe('someone-else');
    await env.redis.del('ls:{m-owner}');
    const gone = await lock.acquire({ leaseMs: 10_000 });
    await env.redis.del('ls:{m-owner}');
    expect(await gone.release()).toBe('expired');
  });

  it('a non-owner cannot extend: extend rejects with LockLostError and the signal aborts', async () => {
    const lock = env.locks().mutex('m-extend');
    const handle = await lock.acquire({ leaseMs: 10_000 });
    await handle.extend(20_000);
    expect((await lock.inspect()).remainingMs).toBeGreaterThan(10_000);
    await env.redis.set('ls:{m-extend}', 'intruder', 'PX', 10_000);
    const error = await handle.extend().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('taken');
    expect(handle.signal.aborted).toBe(true);
    expect(await env.redis.pttl('ls:{m-extend}')).toBeLessThanOrEqual(10_000);
  });

  it('tokens grow per lock name across holders', async () => {
    const lock = env.locks().mutex('m-tokens');
    const tokens: number[] = [];
    for (let i = 0; i < 5; i++) {
      const h = await lock.acquire();
      tokens.push(h.fencingToken);
      await h.release();
    }
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(5);
  });

  it('waitMs bounds acquire (LockTimeoutError) and tryAcquire (undefined)', async () => {
    const lock = env.locks().mutex('m-timeout');
    const held = await lock.acquire();
    const error = await lock.acquire({ waitMs: 50 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).toMatchObject({ code: 'ERR_LOCK_TIMEOUT', lockName: 'm-timeout' });
    expect(await lock.tryAcquire({ waitMs: 50 })).toBeUndefined();
    await held.release();
  });

  it('an AbortSignal cancels waiting', async () => {
    const lock = env.locks().mutex('m-abort');
    const held = await lock.acquire();
    const controller = new AbortController();
    const waiting = lock.acquire({ signal: controller.signal });
    controller.abort(new Error('user gave up'));
    const error = await waiting.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAbortedError);
    expect((error as Error).cause).toEqual(new Error('user gave up'));
    expect(await held.release()).toBe('released');
    expect(await lock.isLocked()).toBe(false); // the aborted waiter did not take it afterwards
  });

  it('await using releases at the end of the scope', async () => {
    const lock = env.locks().mutex('m-using');
    {
      await using handle = await lock.acquire();
      expect(handle.fencingToken).toBeGreaterThan(0);
      expect(await lock.isLocked()).toBe(true);
    }
    expect(await lock.isLocked()).toBe(false);
  });

  it('run() releases after the critical section, also when it throws', async () => {
    const lock = env.locks().mutex('m-run');
    const result = await lock.run(async (signal, handle) => {
      expect(signal.aborted).toBe(false);
      expect(await env.redis.get('ls:{m-run}')).toBe(handle.owner);
      return 42;
    });
    expect(result).toBe(42);
    await expect(lock.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await lock.isLocked()).toBe(false);
  });

  it('run() rejects with LockLostError when the lock was lost during the section', async () => {
    const lock = env.locks({ watchdogTimeoutMs: 300 }).mutex('m-run-lost');
    const error = await lock
      .run(async (signal) => {
        await env.redis.del('ls:{m-run-lost}');
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        return 'done';
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
  });

  it('forceUnlock deletes any holder and wakes waiters', async () => {
    const locks = env.locks();
    const lock = locks.mutex('m-force');
    await lock.acquire({ leaseMs: 60_000 });
    const waiter = lock.acquire({ leaseMs: 1_000 });
    expect(await locks.forceUnlock(lock)).toBe(true);
    const handle = await waiter;
    expect(await handle.release()).toBe('released');
    expect(await locks.forceUnlock(lock)).toBe(false);
  });

  it('rejects bad options with a typed error and touches nothing', async () => {
    const lock = env.locks().mutex('m-options');
    const cases: unknown[] = [
      { leaseMs: -1 },
      { leaseMs: 1.5 },
      { leaseMs: '100' },
      { waitMs: -5 },
      { waitMs: Number.NaN },
      { owner: '' },
      { signal: {} },
      { lease: 100 },
    ];
    for (const options of cases) {
      await expect(lock.acquire(options as never)).rejects.toBeInstanceOf(InvalidLockOptionError);
    }
    expect(await env.redis.exists('ls:{m-options}', 'ls:{m-options}:fence')).toBe(0);
    expect(() => lock.name && env.locks().mutex('')).toThrow(TypeError);
    expect(() => env.locks().mutex('a{b}')).toThrow(/hash tags/);
    expect(() => env.locks({ watchdogTimeoutMs: 0 })).toThrow(InvalidLockOptionError);
  });

  it('a lease or wait past the longest Node timer is refused and the error says why', async () => {
    // node-redlock accepts leases up to Number.MAX_SAFE_INTEGER / 10; a Node timer that long fires at once.
    const lock = env.locks().mutex('m-long');
    for (const options of [{ leaseMs: 2 ** 31 }, { waitMs: Number.MAX_SAFE_INTEGER / 10 }]) {
      const error = await lock.acquire(options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidLockOptionError);
      expect((error as Error).message).toMatch(/24\.8 days, the longest a Node timer waits/);
    }
    expect(await env.redis.exists('ls:{m-long}')).toBe(0);
    const held = await lock.acquire({ leaseMs: 2 ** 31 - 1 }); // the longest accepted
    expect(await env.redis.pttl('ls:{m-long}')).toBeGreaterThan(2 ** 30);
    expect(held.signal.aborted).toBe(false);
    await held.release();
  });

  it('a closed client refuses new work', async () => {
    const locks = env.locks();
    await locks.close();
    await expect(locks.mutex('m-closed').acquire()).rejects.toBeInstanceOf(LockClientClosedError);
  });
});
