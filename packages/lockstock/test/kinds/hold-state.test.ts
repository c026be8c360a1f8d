import { describe, expect, it } from 'vitest';
import { RedisLockClient, type LockClient, type ReentrantLock } from '../../src/index.js';
import { countedRedis } from '../helpers/counted-redis.mjs';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('what a holder reads back about its own hold', () => {
  it('read side: holdCount counts the owner’s read holds, 0 once its lease ended', async () => {
    const locks = env.locks();
    const rw = locks.readWrite('hs-read');
    const first = await rw.read.acquire({ owner: 'reader-a' });
    expect(await rw.read.holdCount('reader-a')).toBe(1);
    const again = await rw.read.acquire({ owner: 'reader-a' });
    expect(await rw.read.holdCount('reader-a')).toBe(2);
    expect(await rw.read.holdCount('reader-b')).toBe(0);
    await again.release();
    await first.release();
    expect(await rw.read.holdCount('reader-a')).toBe(0);

    // A short lease that ends while another reader keeps the readers' hash (and this field) alive.
    const brief = await rw.read.acquire({ owner: 'reader-brief', leaseMs: 1_000 });
    const lasting = await rw.read.acquire({ owner: 'reader-lasting' });
    expect(await rw.read.holdCount('reader-brief')).toBe(1);
    while ((await rw.read.inspect()).holders > 1) await new Promise((r) => setTimeout(r, 20)); // observed
    expect(await env.redis.hexists('ls:{hs-read}:rw:readers', 'reader-brief')).toBe(1); // field still there
    expect(await rw.read.holdCount('reader-brief')).toBe(0);
    expect(await rw.read.holdCount('reader-lasting')).toBe(1);
    await brief.release();
    await lasting.release();
  });

  const reentrantKinds: Record<string, (client: LockClient, name: string) => ReentrantLock> = {
    reentrant: (c, n) => c.reentrant(n),
    fair: (c, n) => c.fair(n),
  };
  for (const [kind, make] of Object.entries(reentrantKinds)) {
    it(`${kind}: re-entry returns the holder's token after another kind under the name issued one`, async () => {
      const locks = env.locks();
      const name = `hs-token-${kind}`;
      const lock = make(locks, name);
      const outer = await lock.acquire({ owner: 'holder' });
      // The fencing counter is per name, shared by every kind: a semaphore of the name moves it on.
      const other = await locks.semaphore(name, { permits: 1 }).acquire();
      expect(other.fencingToken).toBeGreaterThan(outer.fencingToken);
      await other.release();
      const inner = await lock.acquire({ owner: 'holder' });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      await inner.release();
      await outer.release();
    });
  }

  it('reentrant: a lock handed over in a release gets its own token, kept on re-entry', async () => {
    const counted = countedRedis(env.server.url);
    const locks = new RedisLockClient({ redis: counted.redis });
    try {
      const lock = locks.reentrant('hs-handoff');
      const first = await lock.acquire({ owner: 'first' });
      const before = counted.sent;
      const next = lock.acquire({ owner: 'next', waitMs: 10_000 });
      await counted.settledAfter(before + 2); // refused twice: it waits in this client's queue
      await first.release(); // hands the lock to the local waiter in the release script
      const second = await next;
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await (await locks.semaphore('hs-handoff', { permits: 1 }).acquire()).release(); // counter moves on
      const reentry = await lock.acquire({ owner: 'next' });
      expect(reentry.fencingToken).toBe(second.fencingToken);
      await reentry.release();
      await second.release();
    } finally {
      await locks.close();
      counted.redis.disconnect();
    }
  });
});
