import type { LockLostReason } from './errors.js';
import { clockDriftMs, monotonicNow, type ExtendStatus, type LeaseHandle } from './handle.js';

/** One renewed lease: a lock key held by one owner, possibly through several (reentrant) handles. */
interface Lease {
  readonly handles: Set<LeaseHandle>;
  readonly renew: () => Promise<ExtendStatus>;
  renewAt: number;
  validUntil: number;
  renewing: boolean;
}

/**
 * Keeps locks taken without an explicit lease alive: each is held for `timeoutMs` and renewed
 * every third of it (Redisson's watchdog). One timer per client serves every lock; a tick renews all
 * leases due within the next sixth of the timeout at once, so renewals of many locks leave in one
 * batch of writes. A renewal that finds the lock gone marks its handles lost; one that fails (Redis
 * unreachable) is retried until the lease's validity deadline, then the handles are marked lost.
 * Nothing here throws: outcomes go to the handles and to `report`.
 */
export class Watchdog {
  private readonly leases = new Map<string, Lease>();
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

  /** Starts renewing `handle`; `leaseId` groups handles that share one server-side lease. */
  add(leaseId: string, handle: LeaseHandle, renew: () => Promise<ExtendStatus>): void {
    const existing = this.leases.get(leaseId);
    if (existing) {
      existing.handles.add(handle);
      return;
    }
    const renewAt = monotonicNow() + this.timeoutMs / 3;
    this.leases.set(leaseId, {
      handles: new Set([handle]),
      renew,
      renewAt,
      validUntil: handle.validUntil,
      renewing: false,
    });
    this.wakeAt(renewAt);
  }

  delete(leaseId: string, handle: LeaseHandle): void {
    const lease = this.leases.get(leaseId);
    if (!lease?.handles.delete(handle) || lease.handles.size > 0) return;
    this.leases.delete(leaseId);
    if (this.leases.size === 0) this.stop();
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
    for (const [leaseId, lease] of this.leases) {
      if (lease.renewing) {
        if (now >= lease.validUntil) this.expire(leaseId, lease, 'unreachable');
      } else if (lease.renewAt <= horizon) {
        this.renew(leaseId, lease);
      }
    }
    let next = Infinity;
    for (const lease of this.leases.values()) {
      next = Math.min(next, lease.renewing ? lease.validUntil : lease.renewAt);
    }
    if (next !== Infinity) this.wakeAt(next);
  };

  private renew(leaseId: string, lease: Lease): void {
    lease.renewing = true;
    const requestedAt = monotonicNow();
    lease.renew().then(
      (status) => {
        lease.renewing = false;
        if (this.leases.get(leaseId) !== lease) return; // released meanwhile
        if (status !== 'extended') return this.expire(leaseId, lease, status);
        lease.validUntil = requestedAt + this.timeoutMs - clockDriftMs(this.timeoutMs);
        lease.renewAt = requestedAt + this.timeoutMs / 3;
        for (const handle of lease.handles) {
          handle.validUntil = lease.validUntil;
          this.report.renewed(handle);
        }
        this.wakeAt(lease.renewAt);
      },
      (error: unknown) => {
        lease.renewing = false;
        if (this.leases.get(leaseId) !== lease) return;
        const failure = error instanceof Error ? error : new Error(String(error));
        for (const handle of lease.handles) this.report.renewalFailed(handle, failure);
        const now = monotonicNow();
        if (now >= lease.validUntil) return this.expire(leaseId, lease, 'unreachable', failure);
        lease.renewAt = now + Math.min(1_000, this.timeoutMs / 10);
        this.wakeAt(Math.min(lease.renewAt, lease.validUntil));
      },
    );
    this.wakeAt(lease.validUntil);
  }

  private expire(leaseId: string, lease: Lease, reason: LockLostReason, cause?: unknown): void {
    this.leases.delete(leaseId);
    if (this.leases.size === 0) this.stop();
    for (const handle of [...lease.handles]) handle.markLost(reason, cause);
  }
}
