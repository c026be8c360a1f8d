import { LockLostError, NotLockOwnerError, type LockLostReason } from './errors.js';
import { validateLeaseMs } from './options.js';
import type { LockHandle, ReleaseOutcome } from './types.js';

/** What a renewal (or extend) found: still ours and extended, gone, or someone else's. */
export type ExtendStatus = 'extended' | 'expired' | 'taken';

/** The backend operations a handle needs; each backend supplies one per lock. */
export interface LeaseBackend {
  release(handle: LeaseHandle): Promise<ReleaseOutcome>;
  extend(handle: LeaseHandle, leaseMs: number): Promise<ExtendStatus>;
  /** Called once when the handle stops renewing (released or lost). */
  detach(handle: LeaseHandle): void;
  /** Called once when the handle is found lost: emit the client's `lost` event. */
  lost(handle: LeaseHandle, error: LockLostError): void;
}

/**
 * The part of a lease we must assume is gone because clocks drift and replies take time
 * (node-redlock's rule: 1% of the lease + 2 ms). Validity is measured on the monotonic clock from
 * when the acquire/renew request was sent, so a wall-clock jump on this machine changes nothing.
 */
export const clockDriftMs = (leaseMs: number): number => Math.floor(leaseMs * 0.01) + 2;

export const monotonicNow = (): number => performance.now();

export class LeaseHandle implements LockHandle {
  private controller: AbortController | undefined;
  private lost: LockLostError | undefined;
  private releasing: Promise<ReleaseOutcome> | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private lease: number;
  /** `monotonicNow()` after which the lock may already have expired on the server. */
  validUntil: number;
  /** Watchdog bookkeeping: when to renew next, and whether a renewal is in flight. */
  renewAt = 0;
  renewing = false;

  constructor(
    readonly name: string,
    readonly owner: string,
    readonly fencingToken: number,
    leaseMs: number,
    readonly renewed: boolean,
    requestedAt: number,
    private readonly backend: LeaseBackend,
  ) {
    this.lease = leaseMs;
    this.validUntil = requestedAt + leaseMs - clockDriftMs(leaseMs);
    if (!renewed) this.armLeaseEnd();
  }

  get leaseMs(): number {
    return this.lease;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lost) this.controller.abort(this.lost);
    }
    return this.controller.signal;
  }

  get lostError(): LockLostError | undefined {
    return this.lost;
  }

  get isReleased(): boolean {
    return this.releasing !== undefined;
  }

  /** Marks the lock lost (once): aborts the signal and reports the loss. Never throws. */
  markLost(reason: LockLostReason, cause?: unknown): void {
    if (this.lost || this.releasing) return;
    this.lost = new LockLostError(
      this.name,
      reason,
      this.owner,
      this.fencingToken,
      cause === undefined ? undefined : { cause },
    );
    clearTimeout(this.expiryTimer);
    this.backend.detach(this);
    this.controller?.abort(this.lost);
    this.backend.lost(this, this.lost);
  }

  /** One renewal round trip (the watchdog's); says whether the lock was still ours. */
  renewLease(leaseMs: number): Promise<ExtendStatus> {
    return this.backend.extend(this, leaseMs);
  }

  async extend(leaseMs: number = this.lease): Promise<void> {
    validateLeaseMs(leaseMs);
    if (this.lost) throw this.lost;
    if (this.releasing) throw new NotLockOwnerError(this.name, this.owner, 'this handle was released');
    const requestedAt = monotonicNow();
    const status = await this.backend.extend(this, leaseMs);
    if (status === 'extended') {
      this.lease = leaseMs;
      this.validUntil = requestedAt + leaseMs - clockDriftMs(leaseMs);
      if (!this.renewed) this.armLeaseEnd();
      return;
    }
    this.markLost(status);
    throw this.lost ?? new NotLockOwnerError(this.name, this.owner, 'this handle was released');
  }

  release(): Promise<ReleaseOutcome> {
    if (!this.releasing) {
      clearTimeout(this.expiryTimer);
      if (!this.lost) this.backend.detach(this);
      this.releasing = this.backend.release(this);
    }
    return this.releasing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Explicit leases are not renewed: the signal must abort when the lease can no longer be trusted. */
  private armLeaseEnd(): void {
    clearTimeout(this.expiryTimer);
    const delay = Math.max(0, this.validUntil - monotonicNow());
    this.expiryTimer = setTimeout(() => this.markLost('lease_ended'), delay);
    this.expiryTimer.unref();
  }
}
