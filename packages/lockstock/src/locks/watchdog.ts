import type { LockLostReason } from './errors.js';
import { clockDriftMs, monotonicNow, type LeaseHandle } from './handle.js';

/**
 * Keeps locks taken without an explicit lease alive: each is held for `timeoutMs` and renewed
 * every third of it (Redisson's watchdog). One timer per client serves every lock; a tick renews all
 * leases due within the next sixth of the timeout at once, so renewals of many locks leave in one
 * batch of writes. A renewal that finds the lock gone marks the handle lost; one that fails (Redis
 * unreachable) is retried until the lease's validity deadline, then the handle is marked lost.
 * Nothing here throws: outcomes go to the handles and to `report`.
 *
 * Per-handle state lives on the handle (`renewAt`, `renewing`), so adding and removing one — on the
 * hot path of every acquire and release — is a Set operation without allocation.
 */
export class Watchdog {
  private readonly handles = new Set<LeaseHandle>();
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
    return this.handles.size;
  }

  /** Starts renewing `handle` (its backend's extend resets the lease to `timeoutMs`). */
  add(handle: LeaseHandle): void {
    handle.renewAt = monotonicNow() + this.timeoutMs / 3;
    this.handles.add(handle);
    if (handle.renewAt < this.timerAt) this.wakeAt(handle.renewAt);
  }

  /** Stops renewing `handle`. The timer is left to run out: re-arming it per acquire would cost more. */
  delete(handle: LeaseHandle): void {
    this.handles.delete(handle);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    this.handles.clear();
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
    let next = Infinity;
    for (const handle of this.handles) {
      if (handle.renewing) {
        if (now >= handle.validUntil) this.expire(handle, 'unreachable');
      } else if (handle.renewAt <= horizon) {
        this.renew(handle);
      }
      if (this.handles.has(handle))
        next = Math.min(next, handle.renewing ? handle.validUntil : handle.renewAt);
    }
    if (next !== Infinity) this.wakeAt(next);
  };

  private renew(handle: LeaseHandle): void {
    handle.renewing = true;
    const requestedAt = monotonicNow();
    handle.renewLease(this.timeoutMs).then(
      (status) => {
        handle.renewing = false;
        if (!this.handles.has(handle)) return; // released meanwhile
        if (status !== 'extended') return this.expire(handle, status);
        handle.validUntil = requestedAt + this.timeoutMs - clockDriftMs(this.timeoutMs);
        handle.renewAt = requestedAt + this.timeoutMs / 3;
        this.report.renewed(handle);
        this.wakeAt(handle.renewAt);
      },
      (error: unknown) => {
        handle.renewing = false;
        if (!this.handles.has(handle)) return;
        const failure = error instanceof Error ? error : new Error(String(error));
        this.report.renewalFailed(handle, failure);
        const now = monotonicNow();
        if (now >= handle.validUntil) return this.expire(handle, 'unreachable', failure);
        handle.renewAt = now + Math.min(1_000, this.timeoutMs / 10);
        this.wakeAt(Math.min(handle.renewAt, handle.validUntil));
      },
    );
  }

  private expire(handle: LeaseHandle, reason: LockLostReason, cause?: unknown): void {
    this.handles.delete(handle);
    handle.markLost(reason, cause);
  }
}
