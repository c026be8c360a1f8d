import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { LockAbortedError, RedisLockClient } from '../../src/index.js';
import { LocalLockClient } from '../../src/local/index.js';
import { LocalSemaphore } from '../../src/local/shared.js';
import { MAX_TIMER_MS, setTimer } from '../../src/support/timer.js';
import { countedRedis } from '../helpers/counted-redis.mjs';
import { useRedis } from '../helpers/redis.js';

// Node fires a timer set to Infinity or past 2^31−1 ms after 1 ms, with a TimeoutOverflowWarning:
// a sleep meant to last for ever ends at once, and a timer that re-arms itself spins.

const env = useRedis();

let warnings: Error[];
const onWarning = (warning: Error) => {
  if (warning.name === 'TimeoutOverflowWarning') warnings.push(warning);
};
beforeEach(() => {
  warnings = [];
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
  vi.restoreAllMocks();
});

/**
 * Node keeps the timers of one duration in the order they were armed, and a timer it clamped has a
 * duration of 1 ms: once a 1 ms timer armed now has run, so has every clamped timer armed before it
 * (and what it started, by the final turn). An ordering barrier, not a wait for something to happen.
 */
async function afterClampedTimers(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve)); // continuations that arm timers run first
  await new Promise((resolve) => setTimeout(resolve, 1));
  await new Promise((resolve) => setImmediate(resolve));
}

describe('timers past what Node can wait', () => {
  it('setTimer arms nothing for Infinity and clamps a longer delay', () => {
    expect(setTimer(() => undefined, Infinity)).toBeUndefined();
    const timer = setTimer(() => undefined, 3_000_000_000);
    // Node records the delay it will wait in _idleTimeout (1 for a delay it overflowed).
    const armed = (timer as unknown as { _idleTimeout: number })._idleTimeout;
    clearTimeout(timer);
    expect(armed).toBe(MAX_TIMER_MS);
    expect(warnings).toEqual([]);
  });

  it('a waiter that wins a hold without a lease end arms no alarm for the next waiter', async () => {
    // The leave path: the head won and the lock is full (no `more`), so the next local waiter waits
    // for the hold's release — or its lease end, which a hold without a lease (a session carries it,
    // a counter permit) never reaches. The in-process counter semaphore is such a hold with pushed
    // wake-ups; this client's session backends reach the path with none of their families (each has
    // either no wake channel or always lets the next waiter try).
    const attempts = vi.spyOn(LocalSemaphore.prototype, 'attempt');
    const locks = new LocalLockClient({ namespace: `overflow-${randomUUID()}` });
    onTestFinished(() => locks.close());
    const permit = locks.counterSemaphore('leave', { permits: 1 });
    const held = await permit.acquire();
    const first = permit.acquire({ waitMs: 30_000 });
    const second = permit.acquire({ waitMs: 30_000 });
    // The holder's try, each waiter's first try, the head's try on entering the queue: all refused.
    await expect.poll(() => attempts.mock.calls.length).toBe(4);
    await afterClampedTimers();
    expect(attempts.mock.calls.length).toBe(4); // both asleep: the head until a release wakes it

    await held.release(); // wakes the head, which takes the only permit and leaves the queue
    const firstHandle = await first;
    expect(attempts.mock.calls.length).toBe(5);
    await afterClampedTimers();
    expect(attempts.mock.calls.length).toBe(5); // no try in vain by the next waiter
    expect(warnings).toEqual([]);

    await firstHandle.release(); // its release is what wakes the next waiter
    const secondHandle = await second;
    expect(attempts.mock.calls.length).toBe(6);
    await secondHandle.release();
    expect(warnings).toEqual([]);
  });

  it('a retry time past a Node timer does not make a waiter try every millisecond (Redis)', async () => {
    // A holder's key with a TTL longer than a Node timer waits (another tool set it; lockstock's own
    // leases stop at 2^31−1 ms): the refusal's retry time is that TTL, and a waiter with no deadline
    // sleeps until then.
    const keyPrefix = `ovf${randomUUID().slice(0, 8)}`;
    const holder = env.locks({ keyPrefix });
    await (await holder.mutex('far').acquire()).release(); // loads the scripts: no NOSCRIPT retry below
    await env.redis.set(`${keyPrefix}:{far}`, 'another-tool', 'PX', 3_000_000_000);
    const connection = countedRedis(env.server.url);
    const waiter = new RedisLockClient({ redis: connection.redis, keyPrefix });
    const abort = new AbortController();
    const waiting = waiter.mutex('far').acquire({ signal: abort.signal });
    onTestFinished(async () => {
      abort.abort(); // a waiter still trying would spin on through the other tests
      await waiting.catch(() => undefined);
      await waiter.close();
      connection.redis.disconnect();
    });
    // The fast path's try, then the queued try whose refusal the waiter sleeps on.
    await connection.settledAfter(2);
    await afterClampedTimers();
    expect(connection.sent).toBe(2);
    expect(warnings).toEqual([]);
    abort.abort();
    await expect(waiting).rejects.toBeInstanceOf(LockAbortedError);
  });

  it("an election observer's interval past a Node timer does not poll every millisecond", async () => {
    const locks = new LocalLockClient({ namespace: `overflow-${randomUUID()}` });
    const leaders: unknown[] = [];
    const stop = locks.election('far').observe((leader) => leaders.push(leader), {
      intervalMs: 3_000_000_000,
    });
    onTestFinished(() => (stop(), locks.close()));
    await expect.poll(() => leaders.length).toBe(1); // the first read; the next poll is armed after it
    await afterClampedTimers();
    expect(warnings).toEqual([]);
  });
});
