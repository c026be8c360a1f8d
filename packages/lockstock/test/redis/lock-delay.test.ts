import { describe, expect, it } from 'vitest';
import { InvalidLockOptionError, LockLostError } from '../../src/index.js';
import { LocalLockClient } from '../../src/local/index.js';
import { PostgresLockClient } from '../../src/postgres/index.js';
import { useRedis } from '../helpers/redis.js';

/*
 * Lock-delay on Redis: an unclean end (a hold that stopped renewing) leaves the lock refused for the
 * delay after its holder stopped trusting it — read from Redis's own expiry — while a release frees it
 * at once. The ordering is what is checked (the holder told first, the lock still refused after), not
 * a time: the delay is a minute, far beyond any scheduling on a loaded machine.
 */
const DELAY_MS = 60_000;
const redis = useRedis();
const key = (name: string) => `ls:{${name}}`;

describe('lock-delay', () => {
  it('a hold that ends uncleanly keeps the lock refused after its holder is told', async () => {
    const delayed = redis.locks({ lockDelayMs: DELAY_MS });
    const handle = await delayed.mutex('crashed').acquire({ leaseMs: 500 });
    // The store keeps the lease plus the delay; the holder trusts only its lease.
    expect(await redis.redis.pttl(key('crashed'))).toBeGreaterThan(DELAY_MS - 1_000);
    // Nothing renews an explicit lease: the holder is told it ended (as a crashed one would stop)...
    const reason = await new Promise<unknown>((resolve) =>
      handle.signal.addEventListener('abort', () => resolve(handle.signal.reason), { once: true }),
    );
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('lease_ended');
    // ...and the lock is still refused, to this client and any other.
    const other = redis.locks();
    expect(await other.mutex('crashed').tryAcquire()).toBeUndefined();
    const info = await other.mutex('crashed').inspect();
    expect(info.held).toBe(true);
    expect(info.remainingMs).toBeGreaterThan(DELAY_MS - 5_000);
  });

  it('without it, the same end frees the lock with the lease (the control)', async () => {
    const plain = redis.locks();
    const handle = await plain.mutex('plain').acquire({ leaseMs: 500 });
    expect(await redis.redis.pttl(key('plain'))).toBeLessThanOrEqual(500);
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
    await expect.poll(async () => (await redis.locks().mutex('plain').tryAcquire()) !== undefined).toBe(true);
  });

  it('a release frees the lock at once; renewals and hand-offs keep the delay in the store', async () => {
    const delayed = redis.locks({ lockDelayMs: DELAY_MS, watchdogTimeoutMs: 3_000 });
    const first = await delayed.mutex('handed').acquire(); // the watchdog's lease
    expect(await redis.redis.pttl(key('handed'))).toBeGreaterThan(DELAY_MS);
    const waiting = delayed.mutex('handed').acquire(); // same client: handed off in the release
    await first.release();
    const second = await waiting;
    expect(await redis.redis.pttl(key('handed'))).toBeGreaterThan(DELAY_MS);
    await second.extend(1_000);
    expect(await redis.redis.pttl(key('handed'))).toBeGreaterThan(DELAY_MS);
    await second.release();
    expect(await redis.redis.exists(key('handed'))).toBe(0);
    const again = await redis.locks().mutex('handed').tryAcquire();
    expect(again).toBeDefined();
    await again?.release();
  });

  it('every kind with leases takes it: a semaphore permit is kept for the delay too', async () => {
    const delayed = redis.locks({ lockDelayMs: DELAY_MS });
    const permit = await delayed.semaphore('delayed-permits', { permits: 1 }).acquire({ leaseMs: 500 });
    await new Promise((resolve) => permit.signal.addEventListener('abort', resolve, { once: true }));
    expect(await redis.locks().semaphore('delayed-permits', { permits: 1 }).tryAcquire()).toBeUndefined();
  });

  it('is refused where holds end with a session, and when not a positive integer', () => {
    expect(() => redis.locks({ lockDelayMs: -1 })).toThrow(InvalidLockOptionError);
    expect(
      () => new PostgresLockClient({ postgres: 'postgres://127.0.0.1:1/none', lockDelayMs: 1_000 }),
    ).toThrow(/lockDelayMs.*left out on postgres: its holds end with its session/);
    // The local backend's holds have leases: accepted there.
    const local = new LocalLockClient({ lockDelayMs: 1_000 });
    void local.close();
  });
});
