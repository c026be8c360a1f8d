import type { HoldBudget } from '../options.js';
import type { ReleaseOutcome } from '../types.js';
import type { LockLostError } from '../errors.js';
import type { ExtendStatus, LockResource } from './backend.js';
import type { LockCore } from './context.js';
import { handleOf, type HoldHandle } from './handle.js';
import { Hold, type HoldBackend, type HoldOrigin } from './hold.js';
import type { LockKind } from './kind.js';
import { Lease } from './lease.js';

/**
 * What makes a lock's holds and answers them (HoldBackend) — their bookkeeping in the client's core:
 * re-entry counts, the watchdog, the session's holds, the `lost` event. CoreLock (lock.ts) builds the
 * acquire and release paths on it.
 */
export abstract class HoldingLock implements HoldBackend {
  constructor(
    protected readonly core: LockCore,
    protected readonly resource: LockResource,
    readonly kind: LockKind,
  ) {}

  get name(): string {
    return this.resource.name;
  }

  get backendName(): string {
    return this.core.backendName;
  }

  abstract release(hold: Hold): Promise<ReleaseOutcome>;

  /** A new hold, registered where it must be, and the handle the caller gets (handle.ts). */
  protected newHold(
    owner: string,
    token: number,
    leaseMs: number | undefined,
    renewed: boolean,
    requestedAt: number,
    budget?: HoldBudget,
    { label, acquiredAt }: HoldOrigin = {},
  ): HoldHandle {
    const lease = leaseMs === undefined ? undefined : new Lease(leaseMs, renewed, requestedAt);
    const origin = label === undefined && acquiredAt === undefined ? undefined : { label, acquiredAt };
    const hold = new Hold(this.name, owner, token, lease, this, budget, origin);
    if (this.kind.reentrant) this.core.holds.add(this.resource.waitKey, owner);
    if (renewed) this.core.watchdog.add(hold);
    else if (lease === undefined) this.core.sessionHolds.add(hold);
    return handleOf(hold);
  }

  extend(hold: Hold, leaseMs: number): Promise<ExtendStatus> {
    return this.resource.extend(hold.owner, leaseMs);
  }

  ended(hold: Hold): void {
    if (this.kind.reentrant) this.core.holds.remove(this.resource.waitKey, hold.owner);
    if (hold.renewed) this.core.watchdog.delete(hold);
    else if (hold.lease === undefined) this.core.sessionHolds.delete(hold);
  }

  heldAgain(hold: Hold): boolean {
    return this.kind.reentrant && this.core.holds.has(this.resource.waitKey, hold.owner);
  }

  stopRenewing(hold: Hold): void {
    this.core.watchdog.delete(hold);
  }

  lost(hold: Hold, error: LockLostError): void {
    this.core.events.emit('lost', hold.lostEvent(error));
  }

  reportError(error: unknown): void {
    this.core.reportError(error);
  }
}
