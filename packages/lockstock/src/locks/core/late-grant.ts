import { Busy, type LockResource } from './backend.js';
import { monotonicNow, validUntil } from './lease.js';

/**
 * A grant answered too late to trust, as the waiter sees it: busy, try again at once. Not "when
 * woken": the grant is given back by a release that wakes nobody when no other client is queued (the
 * waiter's own client left the queue when it won), so a waiter told to wait for a wake-up slept on a
 * free lock until its deadline. The give-back is awaited before the retry, so the retry finds the
 * lock free, or given to the client whose turn it is (and then a retry time to sleep).
 */
export const LATE_GRANT = new Busy(0);

/**
 * A grant whose answer came too late to trust its lease, asked about once more instead of given
 * back at once: giving it back cost a fair waiter its place in the store's queue, and the retry
 * was queued behind waiters that came after it (the simulation, fair seed 95). An extend that finds
 * the hold still the owner's proves nobody else held the lock meanwhile — the owner id is this
 * acquire's, and a lease that ran out in the store cannot come back — and starts a lease trusted
 * from the extend's request: returns when that was sent. Otherwise (gone, taken, answered late
 * again, or failed) the grant is given back if it may still be ours, and the try counts as refused.
 * The give-back is awaited: the retry (same owner) must not overtake it. Over a transport that may
 * reorder a client's requests (a pool, multiplexed streams) a give-back sent without waiting
 * released the retry's own new grant while its handle lived on (the simulation, mutex seed 167
 * with reordering).
 */
export async function confirmLateGrant(
  resource: LockResource,
  owner: string,
  leaseMs: number,
  reportError: (error: unknown) => void,
): Promise<number | undefined> {
  const extendedAt = monotonicNow();
  try {
    const status = await resource.extend(owner, leaseMs);
    if (status !== 'extended') return undefined; // not ours any more: nothing to give back
    if (monotonicNow() < validUntil(extendedAt, leaseMs)) return extendedAt;
  } catch (error) {
    reportError(error);
  }
  try {
    await resource.release(owner, undefined);
  } catch (error) {
    reportError(error);
  }
  return undefined;
}
