import { clearTimer, setTimer } from '../../support/timer.js';
import type { LockLostReason } from '../errors.js';
import type { ExtendStatus } from './backend.js';
import { monotonicNow, type Lease } from './lease.js';

/** What the watchdog renews: a hold with a lease (core/hold.ts). */
export interface Renewable {
  readonly name: string;
  readonly owner: string;
  readonly fencingToken: number;
  readonly lease: Lease | undefined;
  renewLease(leaseMs: number): Promise<ExtendStatus>;
  markLost(reason: LockLostReason, cause?: unknown): void;
}

/** The watchdog's own bookkeeping per lease; nobody else reads or writes it. */
interface Schedule {
  renewAt: number;
  renewing: boolean;
}

/**
 * Keeps leases taken without an explicit `leaseMs` alive: each is held for `timeoutMs` and renewed
 * every third of it (Redisson's watchdog). One timer per client serves every hold; a tick renews all
 * leases due within the next sixth of the timeout at once, so renewals of many locks leave in one
 * batch of writes. A renewal that finds the hold gone marks it lost; one that fails (server
 * unreachable) is retried until the lease's validity deadline, then the hold is marked lost.
 * Nothing here throws: outcomes go to the holds and to `report`.
 */
export class Watchdog {
  private readonly schedules = new Map<Renewable, Schedule>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  constructor(
    readonly timeoutMs: number,
    private readonly report: {
      renewed(hold: Renewable): void;
      renewalFailed(hold: Renewable, error: Error): void;
    },
  ) {}

  get size(): number {
    return this.schedules.size;
  }

  /** Starts renewing `hold` (its backend's extend resets the lease to `timeoutMs`). */
  add(hold: Renewable): void {
    const renewAt = monotonicNow() + this.timeoutMs / 3;
    this.schedules.set(hold, { renewAt, renewing: false });
    if (renewAt < this.timerAt) this.wakeAt(renewAt);
  }

  /** Stops renewing `hold`. The timer is left to run out: re-arming it per acquire would cost more. */
  delete(hold: Renewable): void {
    this.schedules.delete(hold);
  }

  /** Stops every renewal (the client closes); returns the holds it was renewing. */
  stop(): Renewable[] {
    clearTimer(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    const holds = [...this.schedules.keys()];
    this.schedules.clear();
    return holds;
  }

  private wakeAt(at: number): void {
    if (at >= this.timerAt) return;
    clearTimer(this.timer);
    this.timerAt = at;
    this.timer = setTimer(this.tick, at - monotonicNow());
    this.timer?.unref();
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = monotonicNow();
    const horizon = now + this.timeoutMs / 6;
    let next = Infinity;
    for (const [hold, schedule] of this.schedules) {
      const validUntil = hold.lease?.validUntil ?? Infinity;
      if (schedule.renewing) {
        if (now >= validUntil) this.expire(hold, 'unreachable');
      } else if (schedule.renewAt <= horizon) {
        this.renew(hold, schedule);
      }
      if (this.schedules.has(hold)) next = Math.min(next, schedule.renewing ? validUntil : schedule.renewAt);
    }
    if (next !== Infinity) this.wakeAt(next);
  };

  private renew(hold: Renewable, schedule: Schedule): void {
    schedule.renewing = true;
    const requestedAt = monotonicNow();
    hold.renewLease(this.timeoutMs).then(
      (status) => {
        schedule.renewing = false;
        if (this.schedules.get(hold) !== schedule) return; // released meanwhile
        if (status !== 'extended') return this.expire(hold, status);
        hold.lease?.confirm(requestedAt, this.timeoutMs);
        schedule.renewAt = requestedAt + this.timeoutMs / 3;
        this.report.renewed(hold);
        this.wakeAt(schedule.renewAt);
      },
      (error: unknown) => {
        schedule.renewing = false;
        if (this.schedules.get(hold) !== schedule) return;
        const failure = error instanceof Error ? error : new Error(String(error));
        this.report.renewalFailed(hold, failure);
        const now = monotonicNow();
        const validUntil = hold.lease?.validUntil ?? Infinity;
        if (now >= validUntil) return this.expire(hold, 'unreachable', failure);
        schedule.renewAt = now + Math.min(1_000, this.timeoutMs / 10);
        this.wakeAt(Math.min(schedule.renewAt, validUntil));
      },
    );
  }

  private expire(hold: Renewable, reason: LockLostReason, cause?: unknown): void {
    this.schedules.delete(hold);
    hold.markLost(reason, cause);
  }
}
