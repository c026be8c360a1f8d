import { describe, expect, it } from 'vitest';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('per-hold state survives the lock object cache', () => {
  it('re-entry after more than 4,096 other lock names still re-enters', async () => {
    const locks = env.locks();
    const name = 'cache-reentry';
    // A holder task, and another task of the same client queueing behind it.
    let queued!: Promise<unknown>;
    await locks.reentrant(name).run(async () => {
      queued = locks.reentrant(name).run(async () => undefined, { waitMs: 10_000 });
      // Enough other names that the client's lock object cache is dropped.
      for (let i = 0; i < 4_200; i++) locks.reentrant(`cache-filler-${i}`);
      // A fresh lock object for the same name: re-entry must still skip the local queue
      // (before the fix it queued behind the other task, which waits for this very hold).
      const inner = await locks.reentrant(name).acquire({ waitMs: 2_000 });
      expect(await inner.release()).toBe('still_held');
    });
    await queued;
    expect(await locks.reentrant(name).isLocked()).toBe(false);
  });
});
