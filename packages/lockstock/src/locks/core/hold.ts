import { clearTimer, setTimer } from '../../support/timer.js';
import { LockHoldBudgetError, LockLostError, NotLockOwnerError, type LockLostReason } from '../errors.js';
import { MIN_LEASE_MS, validateLeaseMs, validateMinHoldMs, type HoldBudget } from '../options.js';
import type { KindName, LockHandle, LockLostEvent, ReleaseOptions, ReleaseOutcome } from '../types.js';
import type { ExtendStatus } from './backend.js';
import {
  budgetChannel,
  holdChannel,
  lostChannel,
  releaseChannel,
  renewChannel,
  type BudgetMessage,
  type HoldMessage,
  type LostMessage,
  type ReleaseMessage,
  type RenewMessage,
} from './diagnostics.js';
import { Lease, monotonicNow } from './lease.js';

/** What a hold calls back into: the lock that granted it. */
export interface HoldBackend {
  /** For the diagnostics messages: the lock's kind and the client's backend. */
  readonly kind: { readonly name: KindName };
  readonly backendName: string;
  release(hold: Hold): Promise<ReleaseOutcome>;
  extend(hold: Hold, leaseMs: number): Promise<ExtendStatus>;
  /** Called once when the hold ends, released or lost (stop renewing, forget it for re-entry). */
  ended(hold: Hold): void;
  /** Called once when the hold is found lost: report it (the client's `lost` event). */
  lost(hold: Hold, error: LockLostError): void;
  /**
   * Whether the hold's owner holds the lock again through a newer hold of this client (a re-entry
   * made after this one was lost): a release by owner would then end that one.
   */
  heldAgain(hold: Hold): boolean;
  /** The hold's lease is no longer renewed (stopRenewal): take it off the watchdog. */
  stopRenewing(hold: Hold): void;
  /** A background failure (the release of an abandoned hold): the client's `connectionError`. */
  reportError(error: unknown): void;
}

/** Where a hold came from, for the reports of its loss (an abandoned one above all). */
export interface HoldOrigin {
  readonly label?: string | undefined;
  /** An object whose `stack` was captured at acquire (`acquireStacks`): formatted only if read. */
  readonly acquiredAt?: { readonly stack?: string } | undefined;
}

/**
 * A held lock: the owner, its fencing token and, when the backend's holds expire, its lease. Owns the
 * lost/released state; the AbortSignal is created on first use (most critical sections never ask).
 */
export class Hold implements LockHandle {
  private controller: AbortController | undefined;
  private lostWith: LockLostError | undefined;
  private releasing: Promise<ReleaseOutcome> | undefined;
  private leaseEndTimer: NodeJS.Timeout | undefined;
  private lostListeners: Array<(error: LockLostError) => void> | undefined;
  /** When the grant arrived (monotonic ms): the diagnostics' heldMs and the budget count from it. */
  private readonly grantedAt = monotonicNow();
  private budgetTimer: NodeJS.Timeout | undefined;
  /** Set when the hold outlived a budget with `onBudget: 'abort'`: the signal's reason. */
  private budgetError: LockHoldBudgetError | undefined;
  /** The caller's handle (handle.ts), weakly: a strong reference would keep it from ever being collected. */
  handleRef: WeakRef<LockHandle> | undefined;

  constructor(
    readonly name: string,
    readonly owner: string,
    readonly fencingToken: number,
    /** Undefined when the backend ends holds with its session instead of a lease. */
    readonly lease: Lease | undefined,
    private readonly backend: HoldBackend,
    budget?: HoldBudget,
    readonly origin?: HoldOrigin,
  ) {
    if (lease && !lease.renewed) this.armLeaseEnd(lease);
    if (budget) this.armBudget(budget);
  }

  get leaseMs(): number | undefined {
    return this.lease?.leaseMs;
  }

  get renewed(): boolean {
    return this.lease?.renewed ?? false;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostWith) this.controller.abort(this.lostWith);
      else if (this.budgetError) this.controller.abort(this.budgetError);
    }
    return this.controller.signal;
  }

  get lostError(): LockLostError | undefined {
    return this.lostWith;
  }

  /** The handle the caller holds, for the diagnostics messages; this hold once it was collected. */
  get handle(): LockHandle {
    return this.handleRef?.deref() ?? this;
  }

  get isReleased(): boolean {
    return this.releasing !== undefined;
  }

  /** Marks the hold lost (once): aborts the signal and reports the loss. Never throws. */
  markLost(reason: LockLostReason, cause?: unknown): void {
    if (this.lostWith || this.releasing) return;
    this.lostWith = new LockLostError(
      this.name,
      reason,
      this.owner,
      this.fencingToken,
      cause === undefined ? undefined : { cause },
    );
    clearTimer(this.leaseEndTimer);
    clearTimer(this.budgetTimer);
    this.backend.ended(this);
    this.controller?.abort(this.lostWith);
    if (lostChannel.hasSubscribers || holdChannel.hasSubscribers) this.publishLost(this.lostWith);
    this.backend.lost(this, this.lostWith);
    for (const listener of this.lostListeners ?? []) {
      try {
        listener(this.lostWith);
      } catch {
        // A listener's failure is its own: the others still hear of the loss.
      }
    }
    this.lostListeners = undefined;
  }

  /**
   * The caller's handle was garbage-collected while this hold lived (handle.ts): it is lost as
   * 'abandoned', so the watchdog stops renewing it and its lease runs out on the store's clock. A
   * hold carried by the backend's session has no lease to run out: it is released.
   */
  abandon(): void {
    if (this.lostWith || this.releasing) return;
    this.markLost('abandoned');
    if (this.lease === undefined) this.release().catch((error: unknown) => this.backend.reportError(error));
  }

  /** The client's `lost` event about this hold. */
  lostEvent(error: LockLostError): LockLostEvent {
    const { label, acquiredAt } = this.origin ?? {};
    return {
      name: this.name,
      kind: this.backend.kind.name,
      owner: this.owner,
      fencingToken: this.fencingToken,
      reason: error.reason,
      error,
      label,
      acquiredAt: acquiredAt?.stack,
    };
  }

  onLost(listener: (error: LockLostError) => void): () => void {
    if (this.lostWith) {
      queueMicrotask(() => listener(this.lostWith as LockLostError));
      return () => undefined;
    }
    if (this.releasing) return () => undefined; // released: it can no longer be lost
    (this.lostListeners ??= []).push(listener);
    return () => {
      const index = this.lostListeners?.indexOf(listener) ?? -1;
      if (index >= 0) this.lostListeners?.splice(index, 1);
    };
  }

  stopRenewal(): void {
    const lease = this.lease;
    if (!lease?.renewed || this.lostWith || this.releasing) return;
    this.backend.stopRenewing(this);
    lease.stopRenewing();
    this.armLeaseEnd(lease);
  }

  /** One renewal round trip (the watchdog's): whether the hold was still ours. */
  renewLease(leaseMs: number): Promise<ExtendStatus> {
    const renewing = this.backend.extend(this, leaseMs);
    return renewChannel.hasSubscribers ? this.observeRenewal(renewing) : renewing;
  }

  async extend(leaseMs?: number): Promise<void> {
    const lease = this.lease;
    if (!lease) throw new NotLockOwnerError(this.name, this.owner, 'this hold has no lease to extend');
    const ms = validateLeaseMs(leaseMs ?? lease.leaseMs);
    if (this.lostWith) throw this.lostWith;
    if (this.releasing) throw new NotLockOwnerError(this.name, this.owner, 'this handle was released');
    const requestedAt = monotonicNow();
    const status = await this.backend.extend(this, ms);
    if (status === 'extended') {
      lease.confirm(requestedAt, ms);
      if (!lease.renewed) this.armLeaseEnd(lease);
      return;
    }
    this.markLost(status);
    throw this.lostWith ?? new NotLockOwnerError(this.name, this.owner, 'this handle was released');
  }

  release(options?: ReleaseOptions): Promise<ReleaseOutcome> {
    if (!this.releasing) {
      // Validated before anything ends: a bad option leaves the hold as it was.
      const minHoldMs = options?.minHoldMs === undefined ? 0 : validateMinHoldMs(options.minHoldMs);
      const leftMs = Math.ceil(minHoldMs - (monotonicNow() - this.grantedAt));
      clearTimer(this.leaseEndTimer);
      clearTimer(this.budgetTimer);
      if (!this.lostWith) this.backend.ended(this);
      // A lost hold is released in the store too (the store may not know it is gone yet), unless its
      // owner holds the lock again: the store releases by owner, and would end the newer hold behind
      // its back (the simulation's long run found it: re-entered after a session loss, then the lost
      // outer handle released — another client was granted while the inner one still held).
      const releasing =
        leftMs > 0 && !this.lostWith
          ? this.keepFor(leftMs)
          : this.lostWith && this.backend.heldAgain(this)
            ? Promise.resolve<ReleaseOutcome>('expired')
            : this.backend.release(this);
      // Observed only when someone listens: otherwise the release costs no extra promise.
      this.releasing =
        releaseChannel.hasSubscribers || (holdChannel.hasSubscribers && !this.lostWith)
          ? this.observeRelease(releasing)
          : releasing;
      this.lostListeners = undefined;
    }
    return this.releasing;
  }

  /**
   * The release of `release({ minHoldMs })` with `leftMs` of the minimum to go: the lock stays held,
   * and no longer by this handle. A lease is shortened to what is left (at least the shortest lease),
   * so the store ends it on its own clock — a holder that dies meanwhile changes nothing, and no
   * other node's clock is asked. A hold without a lease (a session's) is released after `leftMs` on
   * this process's monotonic clock, in the background: the store has no clock for it.
   */
  private async keepFor(leftMs: number): Promise<ReleaseOutcome> {
    if (this.lease === undefined) {
      // Not awaited: the caller is done with the handle now. The timer keeps the process alive.
      setTimer(() => {
        this.backend.release(this).catch((error: unknown) => this.backend.reportError(error));
      }, leftMs);
      return 'released';
    }
    const status = await this.backend.extend(this, Math.max(leftMs, MIN_LEASE_MS));
    return status === 'extended' ? 'released' : status === 'taken' ? 'not_owner' : 'expired';
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  // The messages are object literals with their fields written out, not spreads of a common part:
  // a spread copies through a slow path that cost several µs per message.

  private publishLost(error: LockLostError): void {
    const heldMs = monotonicNow() - this.grantedAt;
    const { kind, backendName } = this.backend;
    if (lostChannel.hasSubscribers) {
      const message: LostMessage = {
        name: this.name,
        kind: kind.name,
        backend: backendName,
        owner: this.owner,
        fencingToken: this.fencingToken,
        handle: this.handle,
        reason: error.reason,
        heldMs,
        error,
      };
      lostChannel.publish(message);
    }
    if (holdChannel.hasSubscribers) this.publishHoldEnd('lost', error.reason, heldMs);
  }

  private publishHoldEnd(ended: HoldMessage['ended'], outcome: HoldMessage['outcome'], heldMs: number): void {
    const message: HoldMessage = {
      name: this.name,
      kind: this.backend.kind.name,
      backend: this.backend.backendName,
      owner: this.owner,
      fencingToken: this.fencingToken,
      handle: this.handle,
      ended,
      outcome,
      heldMs,
    };
    holdChannel.publish(message);
  }

  private async observeRelease(releasing: Promise<ReleaseOutcome>): Promise<ReleaseOutcome> {
    const requestedAt = monotonicNow();
    const heldMs = requestedAt - this.grantedAt;
    const wasLost = this.lostWith !== undefined; // its hold message went out with the loss
    const publish = (outcome: ReleaseOutcome | 'error', error?: unknown) => {
      if (releaseChannel.hasSubscribers) {
        const message: ReleaseMessage = {
          name: this.name,
          kind: this.backend.kind.name,
          backend: this.backend.backendName,
          owner: this.owner,
          fencingToken: this.fencingToken,
          handle: this.handle,
          outcome,
          heldMs,
          releaseMs: monotonicNow() - requestedAt,
        };
        if (error !== undefined) (message as { error?: unknown }).error = error;
        releaseChannel.publish(message);
      }
      if (!wasLost && holdChannel.hasSubscribers) this.publishHoldEnd('released', outcome, heldMs);
    };
    try {
      const outcome = await releasing;
      publish(outcome);
      return outcome;
    } catch (error) {
      publish('error', error);
      throw error;
    }
  }

  private async observeRenewal(renewing: Promise<ExtendStatus>): Promise<ExtendStatus> {
    const requestedAt = monotonicNow();
    const publish = (outcome: RenewMessage['outcome'], error?: unknown) => {
      if (!renewChannel.hasSubscribers) return;
      const now = monotonicNow();
      const message: RenewMessage = {
        name: this.name,
        kind: this.backend.kind.name,
        backend: this.backend.backendName,
        owner: this.owner,
        fencingToken: this.fencingToken,
        handle: this.handle,
        outcome,
        heldMs: now - this.grantedAt,
        renewMs: now - requestedAt,
      };
      if (error !== undefined) (message as { error?: unknown }).error = error;
      renewChannel.publish(message);
    };
    try {
      const status = await renewing;
      publish(status === 'extended' ? 'renewed' : 'lost');
      return status;
    } catch (error) {
      publish('failed', error);
      throw error;
    }
  }

  /** A budget's timer: reports the hold (and with 'abort', aborts its signal) unless it ended first. */
  private armBudget(budget: HoldBudget): void {
    this.budgetTimer = setTimer(() => {
      if (this.lostWith || this.releasing) return;
      if (budget.action === 'abort') {
        this.budgetError = new LockHoldBudgetError(this.name, this.owner, this.fencingToken, budget.ms);
        this.controller?.abort(this.budgetError);
      }
      if (budgetChannel.hasSubscribers) {
        const message: BudgetMessage = {
          name: this.name,
          kind: this.backend.kind.name,
          backend: this.backend.backendName,
          owner: this.owner,
          fencingToken: this.fencingToken,
          handle: this.handle,
          budgetMs: budget.ms,
          heldMs: monotonicNow() - this.grantedAt,
          action: budget.action,
        };
        budgetChannel.publish(message);
      }
    }, budget.ms);
    this.budgetTimer?.unref();
  }

  /** Explicit leases are not renewed: the signal must abort when the lease can no longer be trusted. */
  private armLeaseEnd(lease: Lease): void {
    clearTimer(this.leaseEndTimer);
    this.leaseEndTimer = setTimer(() => this.markLost('lease_ended'), lease.validUntil - monotonicNow());
    this.leaseEndTimer?.unref();
  }
}
