import type {
  AttemptRequest,
  AttemptResult,
  ExtendStatus,
  HandOffOffer,
  LockInfo,
  LockResource,
  ReleaseResult,
} from './backend.js';

/**
 * Lock-delay (Chubby's, Consul's `LockDelay`) for locks with leases: the store keeps every lease
 * `delayMs` longer than the holder trusts it. The holder's validity, its signal and the watchdog's
 * rhythm stay those of the lease it asked for; a release deletes the hold at once, as before. Only an
 * unclean end — a holder that stopped renewing (crashed, paused, cut off) — leaves the lock refused
 * for `delayMs` after the holder itself stopped trusting it: the window in which a paused ex-holder
 * that resumes may still write, before anyone else is let in. Decided by the store's own expiry (a
 * key's PX on Redis), so no client clock is trusted for it.
 *
 * It is a resource wrapper, not a backend feature: every backend whose holds have renewable leases
 * gets it unchanged. `inspect().remainingMs` includes the delay (the lock is refused that long).
 */
export class DelayedResource implements LockResource {
  readonly name: string;
  readonly waitKey: string;
  readonly wakeChannel: string | undefined;
  readonly leases: LockResource['leases'];
  readonly ordering: LockResource['ordering'];
  readonly handsOff: boolean;
  readonly holdCount?: LockResource['holdCount'];
  readonly setPermits?: LockResource['setPermits'];
  readonly available?: LockResource['available'];
  readonly readHolder?: LockResource['readHolder'];
  readonly unreachable?: LockResource['unreachable'];

  constructor(
    private readonly inner: LockResource,
    private readonly delayMs: number,
  ) {
    this.name = inner.name;
    this.waitKey = inner.waitKey;
    this.wakeChannel = inner.wakeChannel;
    this.leases = inner.leases;
    this.ordering = inner.ordering;
    this.handsOff = inner.handsOff;
    // The optional methods exist here only where the backend's resource has them (the core asks).
    if (inner.holdCount) this.holdCount = inner.holdCount.bind(inner);
    if (inner.setPermits) this.setPermits = inner.setPermits.bind(inner);
    if (inner.available) this.available = inner.available.bind(inner);
    if (inner.readHolder) this.readHolder = inner.readHolder.bind(inner);
    if (inner.unreachable) this.unreachable = inner.unreachable.bind(inner);
  }

  private stored(leaseMs: number | undefined): number | undefined {
    return leaseMs === undefined ? undefined : leaseMs + this.delayMs;
  }

  attempt(request: AttemptRequest): Promise<AttemptResult> {
    return this.inner.attempt({ ...request, leaseMs: this.stored(request.leaseMs) });
  }

  release(owner: string, offer: HandOffOffer | undefined, leaseLive?: boolean): Promise<ReleaseResult> {
    const delayed = offer && { ...offer, leaseMs: this.stored(offer.leaseMs) };
    return this.inner.release(owner, delayed, leaseLive);
  }

  extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    return this.inner.extend(owner, leaseMs + this.delayMs);
  }

  inspect(): Promise<LockInfo> {
    return this.inner.inspect();
  }

  leave(owner: string, won: boolean, lastOfClient: boolean): void {
    this.inner.leave(owner, won, lastOfClient);
  }
}

/** The resource the core runs a lock on: with the client's lock-delay where its holds have leases. */
export function withLockDelay<R extends LockResource>(resource: R, delayMs: number): LockResource {
  return delayMs > 0 && resource.leases === 'renewable' ? new DelayedResource(resource, delayMs) : resource;
}
