/**
 * What locks are doing, through `node:diagnostics_channel` (the convention of undici and Node's own
 * http): no dependency, and nothing is built or published unless someone subscribed — a lock pays one
 * `hasSubscribers` check per event otherwise. Published from the core (CoreLock, Hold), so every
 * backend reports the same messages. The names and fields are a stable contract: docs/instrumentation.md.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import type { LockLostError, LockLostReason } from '../errors.js';
import type { KindName, LockHandle, ReleaseOutcome } from '../types.js';

/** The channel names (the acquire channel is a TracingChannel: `tracing:<name>:start`, ...). */
export const LOCK_CHANNELS = {
  acquire: 'lockstock:lock:acquire',
  hold: 'lockstock:lock:hold',
  release: 'lockstock:lock:release',
  renew: 'lockstock:lock:renew',
  lost: 'lockstock:lock:lost',
  handoff: 'lockstock:lock:handoff',
  budget: 'lockstock:lock:budget',
} as const;

/** What every message names: the lock, its kind, the client's backend and the hold's owner. */
export interface LockMessage {
  readonly name: string;
  readonly kind: KindName;
  /** The backend's name: 'redis', 'redlock', 'zookeeper', 'etcd', 'postgres', 'mysql', 'local'... */
  readonly backend: string;
  readonly owner: string;
}

/** How an acquire ended: 'busy' is a `tryAcquire` (wait 0) refused, 'timeout' a wait that ran out. */
export type AcquireOutcome = 'acquired' | 'busy' | 'timeout' | 'aborted' | 'closed' | 'error';

/**
 * The context object of the acquire TracingChannel: the same object at start, end, asyncStart,
 * asyncEnd and error. The fields below the line are set when the acquire ends (before asyncStart).
 */
export interface AcquireMessage extends LockMessage {
  /** The caller's wait limit in ms (Infinity: no limit; 0: a try). */
  readonly waitLimitMs: number;
  outcome?: AcquireOutcome;
  /** The hold's token (acquired only). */
  fencingToken?: number;
  /** From the call to the grant or the failure (ms, monotonic clock). */
  waitMs?: number;
  /** The hold (acquired only): the same object later messages about it carry. */
  handle?: LockHandle;
  /**
   * Set by a subscriber, in its `start` handler: the trace id of the span this acquire runs under
   * (lockstock/otel sets its `lock.acquire` span's). The hold's holder metadata records it, so
   * `inspect().heldBy` names the trace that took the lock (where the backend stores metadata).
   */
  traceId?: string;
  /** Set by the TracingChannel: the acquire's value (the handle, or undefined for a refused try). */
  result?: LockHandle | undefined;
  /** Set by the TracingChannel when the acquire rejects. */
  error?: unknown;
}

/** A hold ended: released, or lost. Published once per hold, when it ends. */
export interface HoldMessage extends LockMessage {
  readonly fencingToken: number;
  readonly handle: LockHandle;
  readonly ended: 'released' | 'lost';
  /** The release's outcome ('error' if it failed), or the loss's reason. */
  readonly outcome: ReleaseOutcome | 'error' | LockLostReason;
  /** From the grant to the release call or the loss (ms). */
  readonly heldMs: number;
}

/** A release answered (also of a hold already lost). */
export interface ReleaseMessage extends LockMessage {
  readonly fencingToken: number;
  readonly handle: LockHandle;
  readonly outcome: ReleaseOutcome | 'error';
  readonly heldMs: number;
  /** The release's round trip (ms). */
  readonly releaseMs: number;
  readonly error?: unknown;
}

/** One renewal by the watchdog: 'renewed', 'failed' (retried until the lease ends) or 'lost'. */
export interface RenewMessage extends LockMessage {
  readonly fencingToken: number;
  readonly handle: LockHandle;
  readonly outcome: 'renewed' | 'failed' | 'lost';
  readonly heldMs: number;
  readonly renewMs: number;
  readonly error?: unknown;
}

/** A hold was found lost. */
export interface LostMessage extends LockMessage {
  readonly fencingToken: number;
  readonly handle: LockHandle;
  readonly reason: LockLostReason;
  readonly heldMs: number;
  readonly error: LockLostError;
}

/** A release handed the lock straight to a waiter of this client (`owner` is the new holder). */
export interface HandoffMessage extends LockMessage {
  /** The releasing holder. */
  readonly from: string;
  readonly fencingToken: number;
  readonly handle: LockHandle;
  /** 'local': the release script granted a waiter it was offered; 'server': the backend chose it. */
  readonly via: 'local' | 'server';
}

/** A hold outlived its budget (`holdBudgetMs`). */
export interface BudgetMessage extends LockMessage {
  readonly fencingToken: number;
  readonly handle: LockHandle;
  readonly budgetMs: number;
  readonly heldMs: number;
  /** 'warn': reported only; 'abort': the hold's signal was aborted with a LockHoldBudgetError. */
  readonly action: 'warn' | 'abort';
}

export const acquireChannel = diagnostics_channel.tracingChannel<unknown, AcquireMessage>(
  LOCK_CHANNELS.acquire,
);
export const holdChannel = diagnostics_channel.channel(LOCK_CHANNELS.hold);
export const releaseChannel = diagnostics_channel.channel(LOCK_CHANNELS.release);
export const renewChannel = diagnostics_channel.channel(LOCK_CHANNELS.renew);
export const lostChannel = diagnostics_channel.channel(LOCK_CHANNELS.lost);
export const handoffChannel = diagnostics_channel.channel(LOCK_CHANNELS.handoff);
export const budgetChannel = diagnostics_channel.channel(LOCK_CHANNELS.budget);
