import { clockNow } from '../../support/timer.js';

/**
 * A hold's lease: how long the backend keeps it without a renewal, and until when this client may
 * trust it. The only place the validity rule lives.
 */

/**
 * The part of a lease we must assume is gone because clocks drift and replies take time
 * (node-redlock's rule: 1% of the lease + 2 ms).
 */
export const clockDriftMs = (leaseMs: number): number => Math.floor(leaseMs * 0.01) + 2;

/**
 * Now on the monotonic clock, in ms (`performance.now()`): what lease deadlines are measured on, so
 * that a wall-clock jump changes none of them. (Read through the core's clock seam, support/timer.ts,
 * which a deterministic simulation replaces with virtual time.)
 */
export const monotonicNow = (): number => clockNow();

/**
 * Validity is measured on the monotonic clock from when the request that set the lease was *sent*
 * (a reply can only be later), so a wall-clock jump on this machine changes nothing.
 */
export const validUntil = (requestedAt: number, leaseMs: number): number =>
  requestedAt + leaseMs - clockDriftMs(leaseMs);

export class Lease {
  private ms: number;
  private until: number;
  private renewing: boolean;

  constructor(leaseMs: number, renewed: boolean, requestedAt: number) {
    this.ms = leaseMs;
    this.until = validUntil(requestedAt, leaseMs);
    this.renewing = renewed;
  }

  /** True while the watchdog renews this lease (acquired without an explicit `leaseMs`). */
  get renewed(): boolean {
    return this.renewing;
  }

  /** The watchdog stops renewing it: from now on it ends like an explicit lease. */
  stopRenewing(): void {
    this.renewing = false;
  }

  get leaseMs(): number {
    return this.ms;
  }

  /** `monotonicNow()` after which the hold may already have expired on the server. */
  get validUntil(): number {
    return this.until;
  }

  /** The backend confirmed the lease (extend or renewal) by a request sent at `requestedAt`. */
  confirm(requestedAt: number, leaseMs: number): void {
    this.ms = leaseMs;
    this.until = validUntil(requestedAt, leaseMs);
  }
}
