import { describe, expect, it, vi } from 'vitest';
import { InvalidLockOptionError, PermitsMismatchError } from '../../src/index.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('semaphores', () => {
  it('admits up to its permits, tells how many are free, and wakes a waiter on release', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const semaphore = a.semaphore('sem-basic', { permits: 2 });
    const first = await semaphore.acquire();
    const second = await b.semaphore('sem-basic', { permits: 2 }).acquire();
    expect(await semaphore.available()).toBe(0);
    const third = semaphore.acquire({ waitMs: 5_000 });
    expect(await second.release()).toBe('released');
    const handle = await third;
    expect(handle.fencingToken).toBeGreaterThan(second.fencingToken);
    expect(await semaphore.available()).toBe(0);
    await Promise.all([first.release(), handle.release()]);
    expect(await semaphore.available()).toBe(2);
  });

  it('gives one owner one permit: a second acquire by the same owner is refused, the first kept', async () => {
    const semaphore = env.locks().semaphore('sem-one-per-owner', { permits: 3 });
    const held = await semaphore.acquire({ owner: 'worker-7', leaseMs: 10_000 });
    expect(await semaphore.tryAcquire({ owner: 'worker-7', leaseMs: 1_000 })).toBeUndefined();
    expect(await semaphore.available()).toBe(2);
    expect((await semaphore.inspect()).remainingMs).toBeGreaterThan(5_000); // its lease was not shortened
    expect(await held.release()).toBe('released');
    expect(await semaphore.available()).toBe(3);
  });

  it('a permit whose lease ended counts for nobody, not even for its own owner', async () => {
    // Acquires drop ended leases only once at most one permit is left counting them: below that
    // they stay in Redis (while a live lease keeps the set), and must neither refuse their owner
    // nor hide a free permit.
    const semaphore = env.locks().semaphore('sem-lapsed', { permits: 5 });
    const kept = await semaphore.acquire({ owner: 'worker-z', leaseMs: 10_000 });
    const lapsing = await Promise.all(
      ['worker-a', 'worker-b'].map((owner) => semaphore.acquire({ owner, leaseMs: 50 })),
    );
    await vi.waitFor(async () => expect(await semaphore.available()).toBe(4), { timeout: 5_000 });
    const again = await semaphore.tryAcquire({ owner: 'worker-a', leaseMs: 10_000 });
    if (!again) expect.fail('refused worker-a a permit though its old lease had ended');
    expect(again.fencingToken).toBeGreaterThan(Math.max(...lapsing.map((h) => h.fencingToken)));
    const others = await Promise.all(
      ['worker-c', 'worker-d', 'worker-e'].map((owner) => semaphore.acquire({ owner, leaseMs: 10_000 })),
    );
    expect(await semaphore.available()).toBe(0);
    expect(await semaphore.tryAcquire({ owner: 'worker-f', leaseMs: 10_000 })).toBeUndefined();
    await Promise.all([kept, again, ...others].map((handle) => handle.release()));
    expect(await semaphore.available()).toBe(5);
  });

  it('a counter semaphore has no lease: leaseMs is refused before anything is taken', async () => {
    const semaphore = env.locks().counterSemaphore('sem-counter', { permits: 1 });
    await expect(semaphore.acquire({ leaseMs: 1_000 })).rejects.toBeInstanceOf(InvalidLockOptionError);
    const handle = await semaphore.acquire();
    expect(handle.leaseMs).toBeUndefined();
    expect(handle.renewed).toBe(false);
    await expect(handle.extend(1_000)).rejects.toMatchObject({ code: 'ERR_NOT_LOCK_OWNER' });
    expect(await semaphore.available()).toBe(0);
    expect(await handle.release()).toBe('released');
    expect(await semaphore.available()).toBe(1);
  });

  it('rejects a bad number of permits', () => {
    const locks = env.locks();
    for (const permits of [0, -1, 1.5, Number.NaN, '2']) {
      expect(() => locks.semaphore('sem-bad', { permits: permits as number })).toThrow(
        InvalidLockOptionError,
      );
    }
  });
});

describe('countdown latch', () => {
  it('releases every waiter of every client when the count reaches zero', async () => {
    const [a, b, c] = [env.locks(), env.locks(), env.locks()];
    const latch = a.countDownLatch('latch-basic');
    expect(await latch.trySetCount(3)).toBe(true);
    expect(await latch.trySetCount(5)).toBe(false); // counting down already: unchanged
    const waits = [b, b, c].map((client) => client.countDownLatch('latch-basic').wait({ waitMs: 5_000 }));
    expect(await latch.countDown()).toBe(2);
    expect(await c.countDownLatch('latch-basic').countDown()).toBe(1);
    expect(await b.countDownLatch('latch-basic').wait({ waitMs: 20 })).toBe(false);
    expect(await latch.countDown()).toBe(0);
    expect(await Promise.all(waits)).toEqual([true, true, true]);
    expect(await latch.count()).toBe(0);
    expect(await latch.countDown()).toBe(0); // never below zero
    expect(await latch.wait()).toBe(true);
  });
});

describe('the permit count lives on the server', () => {
  for (const kind of ['semaphore', 'counterSemaphore'] as const) {
    it(`${kind}: a client made with another count is refused, and changes nothing`, async () => {
      const name = `stored-permits-${kind}`;
      const [a, b] = [env.locks(), env.locks()];
      const two = a[kind](name, { permits: 2 });
      const first = await two.acquire(); // stores 2
      // Another service configured with 5 would admit 5 beside the 2 of the first: refused instead.
      const error = await b[kind](name, { permits: 5 })
        .tryAcquire()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PermitsMismatchError);
      expect(error).toMatchObject({ configured: 5, stored: 2, code: 'ERR_PERMITS_MISMATCH' });
      expect((await two.inspect()).holders).toBe(1);
      // Changed for everyone: the old count is refused now, the new one admitted.
      await b[kind](name, { permits: 3 }).setPermits(3);
      await expect(two.tryAcquire()).rejects.toBeInstanceOf(PermitsMismatchError);
      const three = b[kind](name, { permits: 3 });
      const more = [await three.acquire({ waitMs: 0 }), await three.acquire({ waitMs: 0 })];
      expect(await three.tryAcquire()).toBeUndefined(); // 3 in use: the first and these two
      await Promise.all([first.release(), ...more.map((h) => h.release())]);
      await expect(three.setPermits(0)).rejects.toBeInstanceOf(InvalidLockOptionError);
    });
  }

  it('a waiter is woken when more permits are stored', async () => {
    const locks = env.locks();
    const one = locks.semaphore('stored-permits-wake', { permits: 1 });
    const held = await one.acquire();
    const admin = env.locks().semaphore('stored-permits-wake', { permits: 2 });
    const waiting = env.locks().semaphore('stored-permits-wake', { permits: 1 }).acquire({ waitMs: 10_000 });
    // The waiter was made with 1: it learns the new count when it tries again, woken by the change —
    // possibly before setPermits() has answered here, so the expectation listens first.
    const refused = expect(waiting).rejects.toBeInstanceOf(PermitsMismatchError);
    await admin.setPermits(2);
    await refused;
    const second = await admin.acquire({ waitMs: 0 });
    await Promise.all([held.release(), second.release()]);
  });
});
