/**
 * Typed lock errors. Every error has a stable `code`, a `name` and the lock it concerns, so callers
 * can branch on `error.code` and logs say which lock failed and why.
 */

export type LockLostReason =
  /** A renewal found no lock at all: it expired, or someone deleted it (forceUnlock, FLUSHDB...). */
  | 'expired'
  /** A renewal found the lock held by a different owner. */
  | 'taken'
  /** An explicit lease ran out while the handle was still held (no watchdog renews explicit leases). */
  | 'lease_ended'
  /** Renewals kept failing (Redis unreachable) until the lease's local validity deadline passed. */
  | 'unreachable'
  /**
   * The backend session that carried the hold ended or can no longer be trusted (a ZooKeeper session
   * expired or suspended, an etcd lease gone, a database connection dropped); `cause` says which.
   */
  | 'session_lost'
  /**
   * The client was closed while the lock was held: nothing renews its lease any more (the store ends
   * it when the lease runs out) and its session, if any, ended with the client.
   */
  | 'client_closed'
  /** The handle was garbage-collected while held: renewal stopped, and a session hold was released. */
  | 'abandoned';

/**
 * The base of every error the library throws about a lock: `lockName` names the lock, `code` is a
 * stable string (ERR_LOCK_TIMEOUT, ERR_PERMITS_MISMATCH...) to branch on instead of the message. Catch it to handle them all.
 */
export abstract class LockError extends Error {
  abstract readonly code: string;
  constructor(
    readonly lockName: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /**
   * Recognises the same error class of another copy of lockstock too (same SPI version), so a
   * backend's LockUpgradeError or PermitsMismatchError means the same to the core: see support/brand.ts.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return brandedInstanceOf(this, value);
  }
}
Object.defineProperty(LockError.prototype, SPI_BRAND, { value: SPI_VERSION });

/**
 * `acquire()` gave up after `waitMs` without getting the lock. When the client could not reach its
 * servers as the wait ended (a ZooKeeper client without a connection), the lock may have been free:
 * then `disconnected` is true, the message says so and `cause` is a LockConnectionError naming the
 * servers and why — not contention.
 */
export class LockTimeoutError extends LockError {
  override readonly name = 'LockTimeoutError';
  readonly code = 'ERR_LOCK_TIMEOUT';
  /** The client was disconnected from its servers when the wait ended (`cause` says which, and why). */
  readonly disconnected: boolean;
  constructor(
    lockName: string,
    readonly waitedMs: number,
    unreachable?: BackendUnreachableError,
  ) {
    const connection = unreachable && new LockConnectionError(lockName, unreachable);
    super(
      lockName,
      `Timed out after ${Math.round(waitedMs)} ms waiting for lock "${lockName}"${
        unreachable ? `, disconnected from ${unreachable.describe()}` : ''
      }`,
      connection && { cause: connection },
    );
    this.disconnected = connection !== undefined;
  }
}

/** Why a hold was lost, in words, for LockLostError's message. */
const DESCRIBED: Record<LockLostReason, string> = {
  expired: 'it expired or was deleted before it could be renewed',
  taken: 'another owner holds it now',
  lease_ended: 'its lease ran out while it was still in use',
  unreachable: 'it could not be renewed before its lease ran out',
  session_lost: 'the backend session that carried it ended',
  client_closed: 'its client was closed while it was held',
  abandoned: 'its handle was garbage-collected while held (never released)',
};

/** The handle no longer holds the lock; delivered through `handle.signal` and the `lost` event. */
export class LockLostError extends LockError {
  override readonly name = 'LockLostError';
  readonly code = 'ERR_LOCK_LOST';
  constructor(
    lockName: string,
    readonly reason: LockLostReason,
    readonly owner: string,
    readonly fencingToken: number,
    options?: ErrorOptions,
  ) {
    super(
      lockName,
      `Lock "${lockName}" (fencing token ${fencingToken}) was lost: ${DESCRIBED[reason]}`,
      options,
    );
  }
}

/** An operation that needs ownership (extend) was attempted by an owner that does not hold the lock. */
export class NotLockOwnerError extends LockError {
  override readonly name = 'NotLockOwnerError';
  readonly code = 'ERR_NOT_LOCK_OWNER';
  constructor(
    lockName: string,
    readonly owner: string,
    detail: string,
  ) {
    super(lockName, `Owner "${owner}" does not hold lock "${lockName}": ${detail}`);
  }
}

/** Waiting for a lock was cancelled through the caller's AbortSignal (`cause` is the signal's reason). */
export class LockAbortedError extends LockError {
  override readonly name = 'LockAbortedError';
  readonly code = 'ERR_LOCK_ABORTED';
  constructor(lockName: string, reason: unknown) {
    super(lockName, `Waiting for lock "${lockName}" was aborted`, { cause: reason });
  }
}

/**
 * The hold outlived its budget (`holdBudgetMs` with `onBudget: 'abort'`): delivered through
 * `handle.signal` only. The lock is still held — the critical section should stop and release it.
 */
export class LockHoldBudgetError extends LockError {
  override readonly name = 'LockHoldBudgetError';
  readonly code = 'ERR_LOCK_HOLD_BUDGET';
  constructor(
    lockName: string,
    readonly owner: string,
    readonly fencingToken: number,
    readonly budgetMs: number,
  ) {
    super(
      lockName,
      `Lock "${lockName}" (fencing token ${fencingToken}) was held past its budget of ${budgetMs} ms`,
    );
  }
}

/**
 * The lock's backend failed or could not be reached (connection refused, timed out, closed); `cause`
 * is the client's own error. Nothing is known to be held: retry, or treat the work as unprotected.
 */
export class LockBackendError extends LockError {
  override readonly name: string = 'LockBackendError';
  readonly code = 'ERR_LOCK_BACKEND';
  constructor(lockName: string, cause: unknown, message?: string) {
    super(
      lockName,
      message ??
        `The backend of lock "${lockName}" failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/**
 * The lock's backend could not be reached: `address` says where it was looked for, `errorCode` why
 * when the system said (ECONNREFUSED: nothing listens there; ENOTFOUND: the host name does not
 * resolve; ETIMEDOUT...), `cause` is the driver's own error. A LockBackendError (same `code`), so code
 * that handles backend failures handles it too. Nothing is known to be held.
 */
export class LockConnectionError extends LockBackendError {
  override readonly name = 'LockConnectionError';
  /** The backend's name: 'redis', 'zookeeper', 'etcd'... */
  readonly backend: string;
  /** host:port (several, comma-separated), or a socket path; never credentials. */
  readonly address: string;
  /** ECONNREFUSED, ENOTFOUND, ETIMEDOUT... when known. */
  readonly errorCode: string | undefined;
  constructor(lockName: string, unreachable: BackendUnreachableError) {
    super(
      lockName,
      unreachable.cause ?? unreachable,
      `Lock "${lockName}": cannot reach ${unreachable.describe()}`,
    );
    this.backend = unreachable.backend;
    this.address = unreachable.address;
    this.errorCode = unreachable.errorCode;
  }
}

/** Wraps a backend's own error (a lockstock error passes through unchanged). */
export function backendError(lockName: string, error: unknown): Error {
  if (error instanceof LockError || error instanceof InvalidLockOptionError) return error;
  if (error instanceof BackendUnreachableError) return new LockConnectionError(lockName, error);
  return new LockBackendError(lockName, error);
}

/** The lock was granted on the master but not acknowledged by enough replicas in time (WAIT). */
export class LockNotReplicatedError extends LockError {
  override readonly name = 'LockNotReplicatedError';
  readonly code = 'ERR_LOCK_NOT_REPLICATED';
  constructor(
    lockName: string,
    readonly acknowledged: number,
    readonly required: number,
  ) {
    super(
      lockName,
      `Lock "${lockName}" was acknowledged by ${acknowledged} of the ${required} replicas required; it was given back`,
    );
  }
}

/**
 * A semaphore was made with another permit count than the one stored on the server (by the first
 * acquire, or `setPermits`): with both counts in use, neither limit would hold.
 */
export class PermitsMismatchError extends LockError {
  override readonly name = 'PermitsMismatchError';
  readonly code = 'ERR_PERMITS_MISMATCH';
  constructor(
    lockName: string,
    readonly configured: number,
    readonly stored: number,
  ) {
    super(
      lockName,
      `Semaphore "${lockName}" was made with ${configured} permits, but ${stored} are stored on the server: make it with { permits: ${stored} }, or change the stored count for everyone with setPermits()`,
    );
  }
}

/** A read holder asked for the write lock of the same read-write lock: it would wait for itself. */
export class LockUpgradeError extends LockError {
  override readonly name = 'LockUpgradeError';
  readonly code = 'ERR_LOCK_UPGRADE';
  constructor(
    lockName: string,
    readonly owner: string,
  ) {
    super(
      lockName,
      `Owner "${owner}" holds the read lock of "${lockName}" and asked for its write lock, which would wait for its own read hold forever; release the read lock first`,
    );
  }
}

/**
 * Waiting for the lock would never end: the waiting owner is part of a cycle of owners each waiting
 * for a lock another one holds. Thrown by the acquire of one owner of the cycle (the victim); its
 * wait was withdrawn, nothing new is held, and the locks it already holds are still held — release
 * them (or some) so the others can go on, then retry. `detectedBy` says who found the cycle: the
 * database server (PostgreSQL's 40P01 in one transaction, MySQL's 3058) or lockstock's own check of
 * the server's wait graph (locks of one owner sit on separate sessions, which no server links).
 */
export class LockDeadlockError extends LockError {
  override readonly name = 'LockDeadlockError';
  readonly code = 'ERR_LOCK_DEADLOCK';
  constructor(
    lockName: string,
    /** The owner whose wait was withdrawn (undefined when unknown, e.g. a caller's transaction). */
    readonly owner: string | undefined,
    readonly detectedBy: 'server' | 'client',
    /** The owners of the cycle as the server names their sessions (labels), when known. */
    readonly cycle: readonly string[] = [],
    options?: ErrorOptions,
  ) {
    super(
      lockName,
      `Waiting for lock "${lockName}" would deadlock: its owner is in a cycle of owners waiting for each other's locks; the wait was withdrawn, release what it holds and retry`,
      options,
    );
  }
}

/**
 * Releasing a multi-lock failed for some of its parts — its `release()`, or the give-back of the parts
 * already taken when an acquire could not get the rest. Every part was still released (or tried): the
 * parts not named in `parts` are free; those named may stay held until their lease or session ends.
 * `errors` holds each failed part's own error (a LockBackendError naming that part, usually), in the
 * order of `parts` — an AggregateError's shape. Thrown even when only one part failed, so callers have
 * one type to catch; `cause` is the first failure.
 */
export class MultiLockReleaseError extends LockError {
  override readonly name = 'MultiLockReleaseError';
  readonly code = 'ERR_MULTI_LOCK_RELEASE';
  constructor(
    lockName: string,
    /** The names of the parts whose release failed. */
    readonly parts: readonly string[],
    /** Their errors, one per entry of `parts`. */
    readonly errors: readonly unknown[],
    /** How many parts the multi-lock released (or tried to). */
    total: number,
  ) {
    super(
      lockName,
      `Releasing ${parts.length} of the ${total} parts of multi-lock "${lockName}" failed (${parts
        .map((part, i) => `"${part}": ${messageOf(errors[i])}`)
        .join('; ')}); every other part was released`,
      { cause: errors[0] },
    );
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The lock client was closed; no new acquisitions are accepted. */
export class LockClientClosedError extends LockError {
  override readonly name = 'LockClientClosedError';
  readonly code = 'ERR_LOCK_CLIENT_CLOSED';
  constructor(lockName: string) {
    super(lockName, `The lock client is closed; cannot use lock "${lockName}"`);
  }
}

import { brandedInstanceOf, SPI_BRAND, SPI_VERSION } from '../support/brand.js';
import { InvalidLockOptionError } from '../support/option-error.js';
import { BackendUnreachableError, connectionCode } from '../support/unreachable.js';

export { InvalidLockOptionError, BackendUnreachableError, connectionCode };

/**
 * The client's backend does not offer this kind of lock (a shared lock on MySQL, a semaphore on
 * Redlock): refused when the lock is made, with the backend's reason, never a hang later.
 */
export class UnsupportedLockKindError extends LockError {
  override readonly name = 'UnsupportedLockKindError';
  readonly code = 'ERR_UNSUPPORTED_LOCK_KIND';
  constructor(
    lockName: string,
    readonly kind: string,
    readonly backend: string,
    readonly reason: string,
  ) {
    super(lockName, `The ${backend} backend offers no ${kind} lock ("${lockName}"): ${reason}`);
  }
}

/**
 * A backend answered `attempt()` with something that is neither a Granted nor a Busy this copy of
 * lockstock recognises: most often the backend package resolved another copy of lockstock whose SPI
 * version differs (`spiVersion`), so the answer cannot be read safely. The attempt is refused rather
 * than guessed at (an unrecognised refusal read as a grant would let two holders in). Make lockstock
 * a peer dependency of the backend package, so that one copy serves both.
 */
export class ForeignBackendResultError extends LockError {
  override readonly name = 'ForeignBackendResultError';
  readonly code = 'ERR_LOCK_FOREIGN_RESULT';
  constructor(
    lockName: string,
    readonly backend: string,
    /** The SPI version the answer was branded with (undefined: not a lockstock value at all). */
    readonly spiVersion: unknown,
  ) {
    super(
      lockName,
      `The ${backend} backend of lock "${lockName}" answered attempt() with ${
        spiVersion === undefined
          ? 'a value that is not a Granted or Busy'
          : `a result of lockstock's backend SPI version ${String(spiVersion)}`
      }, which this copy of lockstock (SPI version ${SPI_VERSION}) cannot read; the backend likely resolved another copy of lockstock: make lockstock a peer dependency of the backend package`,
    );
  }
}

/**
 * A lock client was given a backend written for another version of the backend SPI (`spiVersion`,
 * declared by the backend or recognised by its shape): refused when the client is made, before any
 * lock could be taken through interfaces the backend does not implement. `changes` says what the
 * backend must change to run on this lockstock (docs/backend.md, "Backends must").
 */
export class IncompatibleBackendError extends Error {
  override readonly name = 'IncompatibleBackendError';
  readonly code = 'ERR_INCOMPATIBLE_BACKEND';
  constructor(
    readonly backend: string,
    readonly spiVersion: number,
    readonly changes: readonly string[],
  ) {
    super(
      `The ${backend} backend was written for lockstock's backend SPI version ${spiVersion}; this lockstock implements version ${SPI_VERSION}. ${
        changes.length > 0
          ? `It must change: ${changes.join('; ')}.`
          : 'Upgrade lockstock to a version that implements it.'
      } See docs/backend.md, "Backends must".`,
    );
  }
}
