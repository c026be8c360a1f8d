import { afterEach, describe, expect, it } from 'vitest';
import { LocalLockClient } from '../../src/local/index.js';
import { Scheduler } from '../sim/scheduler.js';

/**
 * A re-entry's hold is trusted for its own lease from the re-entry: the store must keep the lock that
 * long. The local backend added a hold without touching the lease, so the outer lease's end freed
 * the lock while the inner handle still held it (found by test/sim/'s reentry-keeps-lease). Virtual
 * time (the simulation's clock seam), so the lease ages without sleeping.
 */
describe('local backend: a re-entry renews the lease', () => {
  let restore: (() => void) | undefined;
  afterEach(() => restore?.());

  for (const kind of ['reentrant', 'read', 'write', 'semaphore'] as const) {
    it(`${kind}: the lock stays held for the re-entry's lease`, async () => {
      const scheduler = new Scheduler(1);
      restore = scheduler.install();
      const client = new LocalLockClient({ namespace: `reentry-lease-${kind}` });
      const other = new LocalLockClient({ namespace: `reentry-lease-${kind}` });
      const lockOf = (c: LocalLockClient) =>
        kind === 'reentrant'
          ? c.reentrant('l')
          : kind === 'semaphore'
            ? c.semaphore('l', { permits: 2 })
            : c.readWrite('l')[kind];
      const otherLock = kind === 'read' ? other.readWrite('l').write : lockOf(other);
      const outer = await lockOf(client).acquire({ owner: 'o', leaseMs: 300 });
      scheduler.now = 200;
      const inner = await lockOf(client).acquire({ owner: 'o', leaseMs: 300 });
      if (kind === 'semaphore')
        expect(await otherLock.tryAcquire({ owner: 'x', leaseMs: 300 })).toBeUndefined();
      scheduler.now = 400; // past the outer lease (300), within the inner one (200 + 300)
      expect(inner.signal.aborted).toBe(false);
      expect(await otherLock.tryAcquire({ owner: 'p', leaseMs: 300 })).toBeUndefined();
      await inner.release();
      await outer.release();
      await client.close();
      await other.close();
    });
  }
});
