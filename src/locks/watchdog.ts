import type { LockLostReason } from './errors.js';
import { clockDriftMs, monotonicNow, type ExtendStatus, type LeaseHandle } from './handle.js';

/** Watchdog bookkeeping of one renewed handle. */
interface Lease {
  readonly renew: () => Promise<ExtendStatus>;
  renewAt: number;
  renewing: boolean;
}

/**
 * Keeps locks taken without an explicit lease alive: each is held for `timeoutMs` and renewed
 * every third of it (Redisson's watchdog). One timer per client serves every lock; a tick renews all
 * leases due within the next sixth of the timeout at once, so renewals of many locks leave in one
 * batch of writes. A renewal that finds the lock gone marks the handle lost; one that fails (Redis
 * unreachable) is retried until the lease's validity deadline, then the handle is marked lost.
 * Nothing here throws: outcomes go to the handles and to `report`.
 */
export class Watchdog {
  private readonly leases = new Map<LeaseHandle, Lease>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  constructor(
    readonly timeoutMs: number,
    private readonly report: {
      renewed(handle: LeaseHandle): void;
      renewalFailed(handle: LeaseHandle, error: Error): void;
    },
  ) {}

  get size(): number {
    return this.leases.size;
  }

  /** Starts renewing `handle` with `renew` (which resets its lease to `timeoutMs`). */
  add(handle: LeaseHandle, renew: () => Promise<ExtendStatus>): void {
    const renewAt = monotonicNow() + this.timeoutMs / 3;
    this.leases.set(handle, { renew, renewAt, renewing: false });
    if (renewAt < this.timerAt) this.wakeAt(renewAt);
  }

  delete(handle: LeaseHandle): void {
    if (this.leases.delete(handle) && this.leases.size === 0) this.stop();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private wakeAt(at: number): void {
    if (at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.tick, Math.max(0, at - monotonicNow()));
    this.timer.unref();
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = monotonicNow();
    const horizon = now + this.timeoutMs / 6;
    for (const [handle, lease] of this.leases) {
      if (lease.renewing) {
        if (now >= handle.validUntil) this.expire(handle, 'unreachable');
      } else if (lease.renewAt <= horizon) {
        this.renew(handle, lease);
      }
    }
    let next = Infinity;
    for (const [handle, lease] of this.leases) {
      next = Math.min(next, lease.renewing ? handle.validUntil : lease.renewAt);
    }
    if (next !== Infinity) this.wakeAt(next);
  };

  private renew(handle: LeaseHandle, lease: Lease): void {
    lease.renewing = true;
    const requestedAt = monotonicNow();
    lease.renew().then(
      (status) => {
        lease.renewing = false;
        if (this.leases.get(handle) !== lease) return; // released meanwhile
        if (status !== 'extended') return this.expire(handle, status);
        handle.validUntil = requestedAt + this.timeoutMs - clockDriftMs(this.timeoutMs);
        lease.renewAt = requestedAt + this.timeoutMs / 3;
        this.report.renewed(handle);
        this.wakeAt(lease.renewAt);
      },
      (error: unknown) => {
        lease.renewing = false;
        if (this.leases.get(handle) !== lease) return;
        const failure = error instanceof Error ? error : new Error(String(error));
        this.report.renewalFailed(handle, failure);
        const now = monotonicNow();
        if (now >= handle.validUntil) return this.expire(handle, 'unreachable', failure);
        lease.renewAt = now + Math.min(1_000, this.timeoutMs / 10);
        this.wakeAt(Math.min(lease.renewAt, handle.validUntil));
      },
    );
    this.wakeAt(handle.validUntil);
  }

  private expire(handle: LeaseHandle, reason: LockLostReason, cause?: unknown): void {
    this.delete(handle);
    handle.markLost(reason, cause);
  }
}
