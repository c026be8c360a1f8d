import { describe, expect, it } from 'vitest';
import { RedisLockClient } from '../../src/index.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

/** Polls the server (bounded) until `done` holds: state observed on Redis, not what a client believes. */
async function until(what: string, done: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/**
 * The lost wake-up behind a hung `lockstock lab` run (redis-lock-paused, leases of 30 ms): a waiter's
 * attempt is granted, but the answer arrives after the lease it asked for could be trusted, so the
 * client gives the grant back (a release that, with no other client queued, publishes nothing) and
 * calls the try refused. That refusal carried no retry time: the waiter slept until woken, and no
 * wake-up was armed anywhere — the lock free, no queue, the waiter asleep until its deadline.
 * A link that delays every chunk makes the answer late on purpose, once; then the link heals.
 */
describe('a grant answered too late', () => {
  it('the waiter tries again by itself: it gets the free lock once answers are timely again', async () => {
    const name = 'late-grant-wakeup';
    const lockKey = `ls:{${name}}`;
    const proxy = await FaultProxy.start({ host: '127.0.0.1', port: env.server.port });
    const slow = new RedisLockClient({ redis: { host: '127.0.0.1', port: proxy.port } });
    try {
      await (await slow.mutex('warm').acquire()).release(); // connected, scripts loaded
      const holder = await env.locks().mutex(name).acquire({ leaseMs: 10_000 });
      const waited = slow
        .mutex(name)
        .acquire({ leaseMs: 200, waitMs: 8_000 })
        .then(
          (handle) => handle,
          (error: unknown) => error,
        );
      // The waiter's client is queued for a turn (it will be woken by a release).
      await until('the waiter is queued', async () => (await env.redis.zcard(`${lockKey}:queue`)) === 1);
      // Every chunk 150 ms each way: the turn's grant comes back ≥ 300 ms after it was asked for,
      // past the 200 ms lease. The holder's release gives the waiter's client its turn.
      proxy.set('delay', { delayMs: 150 });
      await holder.release();
      // The waiter took the lock on Redis (token 2) and gave it back: the lock is free, nobody queued.
      await until(
        'the late grant was given back',
        async () =>
          Number(await env.redis.get(`${lockKey}:fence`)) >= 2 &&
          (await env.redis.exists(lockKey, `${lockKey}:queue`)) === 0,
      );
      proxy.set('pass');
      const outcome = await waited;
      expect(outcome).not.toBeInstanceOf(Error); // before the fix: LockTimeoutError after 8 s, lock free
      const handle = outcome as Awaited<ReturnType<ReturnType<RedisLockClient['mutex']>['acquire']>>;
      expect(await env.redis.get(lockKey)).toBe(handle.owner); // what Redis recorded: it holds it
      expect(handle.fencingToken).toBe(Number(await env.redis.get(`${lockKey}:fence`)));
      await handle.release();
    } finally {
      proxy.set('pass');
      proxy.reset();
      await slow.close();
      await proxy.stop();
    }
  });

  it('a refusal naming no retry time on a lease backend: the waiter tries again after its own lease', async () => {
    // The guard beside the fix: a semaphore refuses an owner that holds a permit with no retry time
    // ("until woken"); that permit's lease then ends without a release, so nothing is published.
    const name = 'idle-recheck';
    const semaphore = env.locks().semaphore(name, { permits: 2 });
    const first = await semaphore.acquire({ owner: 'o', leaseMs: 300 });
    const startedAt = performance.now();
    const again = await semaphore.acquire({ owner: 'o', leaseMs: 300, waitMs: 10_000 });
    // Without the guard: LockTimeoutError after 10 s. With it: soon after the first lease ended.
    expect(performance.now() - startedAt).toBeLessThan(9_000);
    expect(first.signal.aborted).toBe(true); // the first permit's lease did end
    expect(again.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await env.redis.zscore(`ls:{${name}}:semaphore`, 'o')).not.toBeNull(); // what Redis holds: its permit
    await again.release();
  });
});
