import { describe, expect, it } from 'vitest';
import { InvalidLockOptionError } from '../../src/index.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('reentrant lock', () => {
  it('re-enters within a run() task, counting holds, with one token', async () => {
    const lock = env.locks().reentrant('r-run');
    const seen: Array<[number, number]> = [];
    await lock.run(async (_signal, outer) => {
      seen.push([await lock.holdCount(), outer.fencingToken]);
      await lock.run(async (_s, inner) => {
        seen.push([await lock.holdCount(), inner.fencingToken]);
        const third = await lock.acquire(); // plain acquire inside the task re-enters too
        seen.push([await lock.holdCount(), third.fencingToken]);
        expect(await third.release()).toBe('still_held');
      });
      seen.push([await lock.holdCount(), outer.fencingToken]);
    });
    const token = seen[0]![1];
    expect(seen).toEqual([
      [1, token],
      [2, token],
      [3, token],
      [1, token],
    ]);
    expect(await lock.isLocked()).toBe(false);
  });

  it('an explicit owner re-enters; another owner waits; the last release frees it', async () => {
    const lock = env.locks().reentrant('r-owner');
    const a1 = await lock.acquire({ owner: 'worker-a' });
    const a2 = await lock.acquire({ owner: 'worker-a' });
    expect(await lock.holdCount('worker-a')).toBe(2);
    expect(await lock.tryAcquire({ owner: 'worker-b' })).toBeUndefined();
    expect(await a2.release()).toBe('still_held');
    expect(await lock.holdCount('worker-a')).toBe(1);
    const b = lock.acquire({ owner: 'worker-b', waitMs: 10_000 });
    expect(await a1.release()).toBe('released');
    const bHandle = await b;
    expect(bHandle.fencingToken).toBeGreaterThan(a1.fencingToken);
    expect(await lock.holdCount('worker-a')).toBe(0);
    expect(await bHandle.release()).toBe('released');
  });

  it('separate tasks do not re-enter each other', async () => {
    const lock = env.locks().reentrant('r-tasks');
    const order: string[] = [];
    let releaseFirst!: () => void;
    const firstHolds = new Promise<void>((resolve) => (releaseFirst = resolve));
    let firstEntered!: () => void;
    const entered = new Promise<void>((resolve) => (firstEntered = resolve));
    const first = lock.run(async () => {
      order.push('first in');
      firstEntered();
      await firstHolds;
      order.push('first out');
    });
    await entered;
    const second = lock.run(async () => {
      order.push('second in');
    });
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'second in']);
  });

  it('a holder re-enters even while other tasks of the same client queue for the lock', async () => {
    const lock = env.locks().reentrant('r-queued');
    const inside: string[] = [];
    // All tasks start before any is awaited: while one holds, the others queue locally. The nested
    // acquire must not queue behind them (they wait for its own release); a bounded wait turns that
    // deadlock into a LockTimeoutError instead of a hung test.
    const tasks = ['a', 'b', 'c'].map((name) =>
      lock.run(async () => {
        await lock.run(
          async () => {
            inside.push(name);
            expect(await lock.holdCount()).toBe(2);
          },
          { waitMs: 2_000 },
        );
      }),
    );
    await Promise.all(tasks);
    expect(inside.sort()).toEqual(['a', 'b', 'c']);
    expect(await lock.isLocked()).toBe(false);
  });

  it('a release by an owner that does not hold it changes nothing', async () => {
    const lock = env.locks().reentrant('r-foreign');
    const a = await lock.acquire({ owner: 'a', leaseMs: 10_000 });
    await env.redis.del('ls:{r-foreign}');
    await env.redis.hset('ls:{r-foreign}', 'b', '1');
    expect(await a.release()).toBe('not_owner');
    expect(await env.redis.hget('ls:{r-foreign}', 'b')).toBe('1');
  });

  it('holdCount outside a task needs an owner', async () => {
    await expect(env.locks().reentrant('r-count').holdCount()).rejects.toBeInstanceOf(InvalidLockOptionError);
  });
});
