import { describe, expect, it } from 'vitest';
import { LockLostError, type RedisLockClient } from '../../src/index.js';
import { LocalLockClient } from '../../src/local/index.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

/**
 * close() stops the watchdog and ends the session: a hold that was renewed (or carried by the
 * session) is no longer kept by anything, so its signal must say so at once. Before, it stayed
 * un-aborted forever while the store ended the hold when its lease ran out, and another client could
 * take the lock while code guarded by the signal went on.
 */
describe('closing a client loses the holds it was keeping', () => {
  const clients: Record<string, () => RedisLockClient | LocalLockClient> = {
    redis: () => env.locks({ watchdogTimeoutMs: 30_000 }),
    local: () => new LocalLockClient({ watchdogTimeoutMs: 30_000 }),
  };
  for (const [backend, make] of Object.entries(clients)) {
    it(`${backend}: every watchdog-renewed hold's signal aborts with LockLostError 'client_closed'`, async () => {
      const client = make();
      const lost: string[] = [];
      client.on('lost', (event) => lost.push(event.name));
      const mutex = await client.mutex(`close-${backend}-mutex`).acquire();
      const reentrant = await client.reentrant(`close-${backend}-reentrant`).acquire();
      const permit = await client.semaphore(`close-${backend}-sem`, { permits: 2 }).acquire();
      // An explicit lease was never renewed: it still ends on time, and says so then.
      const leased = await client.mutex(`close-${backend}-leased`).acquire({ leaseMs: 60_000 });
      await client.close();

      for (const handle of [mutex, reentrant, permit]) {
        expect(handle.signal.aborted).toBe(true);
        const reason: unknown = handle.signal.reason;
        expect(reason).toBeInstanceOf(LockLostError);
        expect((reason as LockLostError).reason).toBe('client_closed');
      }
      expect(leased.signal.aborted).toBe(false);
      expect(lost.sort()).toEqual(
        [`close-${backend}-mutex`, `close-${backend}-reentrant`, `close-${backend}-sem`].sort(),
      );
    });
  }
});
