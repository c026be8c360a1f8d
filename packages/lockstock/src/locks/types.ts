/**
 * The backend-neutral lock API. Redis implements it today; ZooKeeper, etcd and SQL backends
 * implement the same interfaces, so code written against these types does not change with the backend.
 */
import type { LockLostError, LockLostReason } from './errors.js';

/** What `release()` found. It never deletes another owner's lock. */
export type ReleaseOutcome =
  /** This hold was the last one; the lock is free and waiters were woken. */
  | 'released'
  /** A reentrant hold was released but the same owner still holds the lock (outer holds remain). */
  | 'still_held'
  /** Another owner holds the lock now (ours had expired and was taken); nothing was changed. */
  | 'not_owner'
  /** There was no lock to release: it had expired or was deleted. */
  | 'expired';

export interface AcquireOptions {
  /**
   * How long the lock is held before it expires on its own, in ms. Without it, the lock is held for
   * the client's watchdog timeout and renewed every third of it until release (Redisson semantics);
   * with it, nothing renews the lock and `handle.signal` aborts when the lease runs out.
   * @default undefined (watchdog)
   */
  leaseMs?: number;
  /**
   * How long to wait for the lock, in ms. `acquire()` throws LockTimeoutError after it,
   * `tryAcquire()` returns undefined.
   * @default Infinity for acquire(), 0 for tryAcquire()
   */
  waitMs?: number;
  /** Cancels waiting; the acquire call rejects with LockAbortedError. */
  signal?: AbortSignal;
  /**
   * Identity of the holder. Reentrant locks re-enter when the same owner acquires again. By default
   * a mutex uses a fresh owner per acquire, and a reentrant lock uses the owner of the current
   * `run()` task (see `Lock.run`) or else a fresh one.
   */
  owner?: string;
}

/** A held lock. Dispose it (`await using`) or call `release()`. */
export interface LockHandle extends AsyncDisposable {
  readonly name: string;
  readonly owner: string;
  /**
   * Strictly increasing per lock name across all holders: hand it to the protected resource so it
   * can reject writes from a holder whose lease ran out (see FencedStore). Re-entry keeps the token.
   */
  readonly fencingToken: number;
  /** The lease in ms (the watchdog timeout when the watchdog renews it). */
  readonly leaseMs: number;
  /** True when the watchdog renews this lock. */
  readonly renewed: boolean;
  /** Aborts with a LockLostError as soon as the lock is known to be lost. */
  readonly signal: AbortSignal;
  /** The LockLostError once the lock is known to be lost, else undefined. */
  readonly lostError: LockLostError | undefined;
  /**
   * Resets the lease to `leaseMs` (default: the lease it was acquired with). Throws LockLostError
   * if the lock is no longer held by this owner.
   */
  extend(leaseMs?: number): Promise<void>;
  /** Releases this hold and says what it found. Calling it again returns the first outcome. */
  release(): Promise<ReleaseOutcome>;
}

/** Options of `Lock.run`: as for acquire, but the owner comes from the run() task. */
export type RunOptions = Omit<AcquireOptions, 'owner'>;

/** The work a `run()` call protects; `signal` aborts if the lock is lost while it runs. */
export type CriticalSection<T> = (signal: AbortSignal, handle: LockHandle) => Promise<T> | T;

export interface Lock {
  readonly name: string;
  /** Waits for the lock (forever unless `waitMs` or `signal`). */
  acquire(options?: AcquireOptions): Promise<LockHandle>;
  /** Takes the lock if it can within `waitMs` (default 0); undefined otherwise. */
  tryAcquire(options?: AcquireOptions): Promise<LockHandle | undefined>;
  /**
   * Acquires, runs `fn`, releases. Inside `fn`, the async context carries an owner: a reentrant lock
   * acquired again in that context re-enters instead of deadlocking. If the lock is lost while `fn`
   * runs, `signal` aborts, and `run` rejects with the LockLostError after `fn` settles (the work ran
   * at least partly unprotected — the caller must know).
   */
  run<T>(fn: CriticalSection<T>, options?: RunOptions): Promise<T>;
  /** True if anyone holds the lock right now. */
  isLocked(): Promise<boolean>;
  /** Remaining lease of the current holder in ms; undefined if free; Infinity if it never expires. */
  remainingTtl(): Promise<number | undefined>;
  /** Deletes the lock whoever holds it and wakes waiters. True if there was a lock. */
  forceUnlock(): Promise<boolean>;
}

export interface ReentrantLock extends Lock {
  /** How many times `owner` (default: the current `run()` task's owner) holds this lock; 0 if not. */
  holdCount(owner?: string): Promise<number>;
}

export interface LockLostEvent {
  readonly name: string;
  readonly owner: string;
  readonly fencingToken: number;
  readonly reason: LockLostReason;
  readonly error: LockLostError;
}

export interface RenewedEvent {
  readonly name: string;
  readonly owner: string;
  readonly fencingToken: number;
}

export interface RenewalFailedEvent {
  readonly name: string;
  readonly owner: string;
  /** Renewals are retried until the lease's validity deadline; then the lock is reported lost. */
  readonly error: Error;
}

/** Events of a lock client. Background work reports here; it never throws from a timer. */
export interface LockClientEvents {
  lost: [LockLostEvent];
  /** The watchdog renewed a lease. */
  renewed: [RenewedEvent];
  renewalFailed: [RenewalFailedEvent];
  /** Connection-level problems of background connections (the shared subscriber). */
  connectionError: [Error];
}
