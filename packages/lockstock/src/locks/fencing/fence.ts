/**
 * Fencing: a lease lock cannot stop a paused holder from acting after its lease ran out (GC pause,
 * SIGSTOP, a slow network) — only the resource can. Every acquire returns a fencing token that grows
 * per lock name; a fenced resource remembers the (token, owner) of the last write it accepted and
 * rejects a write whose token is lower, or equal but from another owner. The owner half matters when
 * a token is re-issued: a Redis counter can go back after a failover or a restart without persistence.
 */
export interface Fence {
  readonly fencingToken: number;
  readonly owner: string;
}

/** What `claim` found: the value, or that a newer holder has already claimed or written the key. */
export type FencedClaim<V> = { granted: true; value: V | undefined } | { granted: false };

/** A store that accepts a write only from the newest holder (any LockHandle is a Fence). */
export interface FencedStore<V> {
  /** Writes if `fence` is not stale; false (nothing changed) if a newer holder already wrote. */
  write(key: string, value: V, fence: Fence): Promise<boolean>;
  /**
   * Reads for a read-modify-write: records `fence` as the key's newest (same rule as `write`) and
   * returns the value. Fencing writes alone does not protect a write computed from a read: a stale
   * holder that resumes between a newer holder's read and write is accepted (no newer token seen yet)
   * and the newer write then overwrites it — a lost update. Claiming first makes that stale write
   * fail. Not granted (nothing changed) if a newer holder has claimed or written.
   */
  claim(key: string, fence: Fence): Promise<FencedClaim<V>>;
  /**
   * The key's value, or undefined if it was never written. A plain read records no fence: to write a
   * value computed from it, read it with `claim` instead.
   */
  read(key: string): Promise<V | undefined>;
}

/** Checks a Fence handed to a fenced store: a non-negative safe-integer token and a non-empty owner. */
export function assertFence(fence: Fence): void {
  if (!Number.isSafeInteger(fence?.fencingToken) || fence.fencingToken < 0) {
    throw new TypeError('fence.fencingToken must be a non-negative safe integer');
  }
  if (typeof fence.owner !== 'string' || fence.owner.length === 0) {
    throw new TypeError('fence.owner must be a non-empty string');
  }
}
