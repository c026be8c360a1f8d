/**
 * The backend-neutral lock API. Code written against these types does not change with the backend
 * (Redis today; ZooKeeper, etcd and SQL implement the same interfaces).
 */
import type { ServerFinding, ServerReport } from './server-checks.js';
import type { LockInfo, ReleaseOutcome } from './core/backend.js';
import type { KindName } from './core/kind.js';
import type { LockLostError, LockLostReason } from './errors.js';

// Defined beside the SPI that answers them (a backend's release reports a ReleaseOutcome), so that
// the SPI's module needs nothing of this one: no import circle between the two.
export type { LockInfo, KindName, ReleaseOutcome };

/**
 * Options of `acquire()` and `tryAcquire()`: how long to hold (lease or watchdog), how long to wait,
 * who holds, and a budget for the hold. Every field is optional; without any, `acquire()` waits for
 * ever and the watchdog renews the hold until it is released.
 */
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
   * Identity of the holder. Reentrant kinds re-enter when the same owner acquires again. By default
   * a mutex or semaphore uses a fresh owner per acquire, and reentrant kinds the owner of the current
   * `run()` task (see `Lock.run`), or else a fresh one.
   */
  owner?: string;
  /**
   * A budget for the hold, in ms: a hold still held this long after its grant is reported on the
   * `lockstock:lock:budget` diagnostics channel (docs/instrumentation.md) and, with
   * `onBudget: 'abort'`, its `signal` aborts with a LockHoldBudgetError (the lock stays held until
   * released). Each part of a multi-lock has the budget.
   * @default undefined (no budget)
   */
  holdBudgetMs?: number;
  /**
   * What a hold past its `holdBudgetMs` does: 'warn' publishes the budget message only; 'abort' also
   * aborts the hold's signal.
   * @default 'warn'
   */
  onBudget?: 'warn' | 'abort';
  /**
   * A name for this hold, shown by `inspect().heldBy` with the holder's host, pid, trace id and
   * since when (where the backend stores holder metadata): what the holder is doing, e.g.
   * `'nightly-invoices'`. 1 to 64 characters, no control characters.
   * @default undefined (no label)
   */
  label?: string;
}

/** A held lock (or permit). Dispose it (`await using`) or call `release()`. */
export interface LockHandle extends AsyncDisposable {
  readonly name: string;
  readonly owner: string;
  /**
   * Strictly increasing per lock name across all holders: hand it to the protected resource so it
   * can reject writes from a holder whose lease ran out (see FencedStore). Re-entry keeps the token.
   */
  readonly fencingToken: number;
  /**
   * The lease in ms (the watchdog timeout when the watchdog renews it); undefined when the backend
   * holds the lock for as long as its session lasts, or the kind has no lease (counter semaphore).
   */
  readonly leaseMs: number | undefined;
  /** True when the watchdog renews this hold. */
  readonly renewed: boolean;
  /** Aborts with a LockLostError as soon as the hold is known to be lost. */
  readonly signal: AbortSignal;
  /** The LockLostError once the hold is known to be lost, else undefined. */
  readonly lostError: LockLostError | undefined;
  /**
   * Resets the lease to `leaseMs` (default: the lease it was acquired with). Throws LockLostError
   * if the lock is no longer held by this owner.
   */
  extend(leaseMs?: number): Promise<void>;
  /**
   * Releases this hold and says what it found. Calling it again returns the first outcome. With
   * `minHoldMs`, the lock stays held until that long after its grant (see ReleaseOptions).
   */
  release(options?: ReleaseOptions): Promise<ReleaseOutcome>;
  /**
   * Calls `listener` once if the hold is lost (besides `signal`); returns the function that removes
   * it. A hold already lost calls it on the next microtask; a released one never.
   */
  onLost(listener: (error: LockLostError) => void): () => void;
  /**
   * Stops the watchdog renewing this hold (a no-op for an explicit lease): its lease ends after the
   * current term unless `extend()` is called, and then `signal` aborts ('lease_ended'). For a task
   * that has finished with the resource but keeps the handle, or hands renewal to another process.
   */
  stopRenewal(): void;
}

/** Options of `handle.release()`. */
export interface ReleaseOptions {
  /**
   * Keep the lock held until this many ms after it was granted (ShedLock's `lockAtLeastFor`): the
   * handle is done at once, but a hold with a lease has it shortened to what is left of the minimum,
   * so the store ends it on its own clock; a session's hold is released when the minimum is over.
   * @default 0
   */
  minHoldMs?: number;
}

/** What `Lock.adopt` needs besides the owner: what the acquiring process was given. */
export interface AdoptOptions {
  /** The hold's fencing token (`handle.fencingToken` where it was acquired). */
  fencingToken: number;
  /**
   * The lease to set now and keep, in ms; without it the watchdog of the adopting client renews
   * the hold (the acquiring process should `stopRenewal()` or exit).
   * @default undefined (watchdog)
   */
  leaseMs?: number;
}

/** Options of `Lock.run`: as for acquire, but the owner comes from the run() task. */
export type RunOptions = Omit<AcquireOptions, 'owner'>;

/** The work a `run()` call protects; `signal` aborts if the lock is lost while it runs. */
export type CriticalSection<T> = (signal: AbortSignal, handle: LockHandle) => Promise<T> | T;

/**
 * A lock by name, of one kind (mutex, reentrant, fair, spin, a read or write side, a semaphore), made
 * by a LockClient's factory. The object holds nothing but its name: every acquire returns its own
 * LockHandle, so one Lock may be shared by any number of concurrent tasks.
 */
export interface Lock {
  /** The lock's name, as given to the client's factory: the same name is the same lock everywhere. */
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
  /**
   * Takes over a hold another process acquired, by its owner id (`handle.owner` there; keep it
   * secret: knowing it is the proof of ownership). The hold's lease is renewed (or set to `leaseMs`)
   * on the backend first: a hold that ended or that another owner has now is refused with
   * NotLockOwnerError. The returned handle releases, extends and signals loss like any other; a
   * reentrant owner re-enters through this client from then on.
   */
  adopt(owner: string, options: AdoptOptions): Promise<LockHandle>;
  /** True if anyone holds the lock right now. */
  isLocked(): Promise<boolean>;
  /** Holders and remaining lease right now (for monitoring: decisions belong in acquire). */
  inspect(): Promise<LockInfo>;
}

/**
 * A lock the same owner may take again while holding it (each acquire adds a hold; each release
 * removes one, and the lock is free when the last is released). The owner is the current `run()`
 * task's unless `owner` is given.
 */
export interface ReentrantLock extends Lock {
  /** How many times `owner` (default: the current `run()` task's owner) holds this lock; 0 if not. */
  holdCount(owner?: string): Promise<number>;
}

/**
 * Many readers or one writer, both reentrant. A writer that waits keeps new readers out (readers
 * cannot starve writers); a write holder may also take the read lock and then release the write lock
 * (downgrade). A read holder asking for the write lock waits for its own read hold: never do that.
 */
export interface ReadWriteLock {
  readonly name: string;
  readonly read: ReentrantLock;
  readonly write: ReentrantLock;
}

/** Options of `semaphore()` and `counterSemaphore()`. */
export interface SemaphoreOptions {
  /**
   * How many holders at once. The first acquire stores it on the server; a client made with another
   * number fails with PermitsMismatchError (see `setPermits` to change it for everyone).
   */
  permits: number;
}

/** Up to `permits` holders at once; each acquire takes one permit. */
export interface Semaphore extends Lock {
  readonly permits: number;
  /** Permits free right now. */
  available(): Promise<number>;
  /**
   * Stores a new permit count on the server for every client of this semaphore (the first acquire
   * stores the count it was made with). Clients made with another count then fail with
   * PermitsMismatchError until they are made with this one: no two limits are ever in force at once.
   */
  setPermits(permits: number): Promise<void>;
}

/** Redisson's CountDownLatch: waiters are released when the count reaches zero. */
export interface CountDownLatch {
  readonly name: string;
  /** Sets the count if the latch is not counting down already; false if it was. */
  trySetCount(count: number): Promise<boolean>;
  /** Decrements the count (never below zero); returns the count left. Zero releases every waiter. */
  countDown(): Promise<number>;
  /** The count left (0 when never set or already released). */
  count(): Promise<number>;
  /** Waits until the count is zero: true, or false after `waitMs`. Rejects with LockAbortedError. */
  wait(options?: { waitMs?: number; signal?: AbortSignal }): Promise<boolean>;
}

/** Who leads an election right now. */
export interface Leader {
  /** What the leader proclaimed (its address, its id...). */
  readonly value: string;
  /** The term's fencing token: strictly increasing per election, a new one for every term. */
  readonly fencingToken: number;
}

/** A term won by `campaign`: this candidate leads until it resigns or its term is lost. */
export interface Term extends AsyncDisposable {
  readonly election: string;
  readonly value: string;
  /** Hand it to what the leader writes to, as with a lock's fencing token. */
  readonly fencingToken: number;
  /**
   * Aborts with a LockLostError as soon as the term is known to be lost (its lease or the backend
   * session that carried it ended): stop acting as leader at once.
   */
  readonly signal: AbortSignal;
  /** Gives up leadership (the next candidate is elected). Calling it again does nothing. */
  resign(): Promise<void>;
}

/**
 * Leader election (etcd's concurrency.Election, Curator's LeaderLatch): candidates campaign, one
 * leads per term. A campaign is aborted — rejected with LockLostError, or its term's signal aborted —
 * when the candidate's own lease or session ends, which Go's etcd client does not notice.
 */
export interface Election {
  readonly name: string;
  /** Waits until this candidate leads (forever unless `waitMs` or `signal`), proclaiming `value`. */
  campaign(value: string, options?: { waitMs?: number; signal?: AbortSignal }): Promise<Term>;
  /** The leader right now, or undefined when nobody leads. */
  leader(): Promise<Leader | undefined>;
  /**
   * Calls `listener` with the leader whenever it may have changed (and once at the start); returns
   * the function that stops observing. Backends without notifications check every `intervalMs`.
   */
  observe(listener: (leader: Leader | undefined) => void, options?: { intervalMs?: number }): () => void;
}

/**
 * A held multi-lock: every part is held. Its fencing token is the first part's (by lock name).
 * `release()` releases every part, even when some fail, then rejects with MultiLockReleaseError
 * naming the parts that failed (all the others are free).
 */
export interface MultiLockHandle extends LockHandle {
  readonly parts: readonly LockHandle[];
}

/** Every lock client (one per backend) offers the same family. */
export interface LockClient extends AsyncDisposable {
  /** A non-reentrant mutex. */
  mutex(name: string): Lock;
  /** A reentrant lock (re-entry per `run()` task or explicit owner). */
  reentrant(name: string): ReentrantLock;
  /** A reentrant lock granted strictly in arrival order across all clients. */
  fair(name: string): ReentrantLock;
  /** A reentrant lock whose waiters back off instead of subscribing (for very many locks). */
  spin(name: string): ReentrantLock;
  /** A read-write lock: many readers or one writer (see ReadWriteLock). */
  readWrite(name: string): ReadWriteLock;
  /** Permits with leases: a crashed holder's permit comes back when its lease ends. */
  semaphore(name: string, options: SemaphoreOptions): Semaphore;
  /** Permits counted without leases (Redisson's RSemaphore): a crashed holder's permit is lost. */
  counterSemaphore(name: string, options: SemaphoreOptions): Semaphore;
  /** A count-down latch: waiters are released when its count reaches zero (see CountDownLatch). */
  countDownLatch(name: string): CountDownLatch;
  /** Leader election (see Election); refused with UnsupportedLockKindError where a backend cannot. */
  election(name: string): Election;
  /** All of `locks` or none (acquired in name order, partial acquisitions undone). */
  multiLock(locks: readonly Lock[]): Lock;
  /** Checks the server the locks depend on now (what `lockstock doctor` prints; see ServerReport). */
  checkServer(): Promise<ServerReport>;
  /** Stops renewals and closes what the client opened; held locks then expire with their lease. */
  close(): Promise<void>;
}

/**
 * A client's `lost` event: a hold ended before it was released (its lease ran out, another owner
 * took it, renewals kept failing, or the backend session ended). The hold's `signal` has aborted
 * with the same error.
 */
export interface LockLostEvent {
  readonly name: string;
  readonly kind: KindName;
  readonly owner: string;
  readonly fencingToken: number;
  readonly reason: LockLostReason;
  readonly error: LockLostError;
  /** The hold's `label` (AcquireOptions), if it had one: which job leaked an abandoned hold. */
  readonly label?: string | undefined;
  /** The stack of the acquire call, when the client captures them (`acquireStacks`). */
  readonly acquiredAt?: string | undefined;
}

/** A client's `renewed` event: the watchdog extended a hold's lease. */
export interface RenewedEvent {
  readonly name: string;
  readonly owner: string;
  readonly fencingToken: number;
}

/**
 * A client's `renewalFailed` event: one renewal of a hold failed (the backend could not be reached,
 * say). The hold is not lost yet: the watchdog keeps trying until the lease's validity deadline.
 */
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
  /** Connection-level problems (the shared subscriber, background releases). */
  connectionError: [Error];
  /** The first acquire's check found a server setting that weakens the locks (serverChecks). */
  serverWarning: [ServerWarningEvent];
}

/** A finding of the server check, with the backend it concerns. */
export interface ServerWarningEvent extends ServerFinding {
  readonly backend: string;
}
