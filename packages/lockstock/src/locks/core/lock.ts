import { spiVersionOf } from '../../support/brand.js';
import {
  backendError,
  ForeignBackendResultError,
  InvalidLockOptionError,
  LockAbortedError,
  LockTimeoutError,
  LockUpgradeError,
} from '../errors.js';
import { resolveAcquireOptions, type HoldBudget, type ResolvedAcquireOptions } from '../options.js';
import { currentTaskOwner, newOwnerId } from '../owner.js';
import { runLocked } from '../run.js';
import type {
  AcquireOptions,
  AdoptOptions,
  CriticalSection,
  Lock,
  LockHandle,
  LockInfo,
  ReleaseOutcome,
  RunOptions,
} from '../types.js';
import { Busy, Granted, type AttemptResult, type ReleaseResult } from './backend.js';
import { proveHold } from './adopt.js';
import { stackAt, type HoldHandle } from './handle.js';
import type { Hold, HoldOrigin } from './hold.js';
import { HoldingLock } from './holding.js';
import { holderNow } from './holder.js';
import { confirmLateGrant, LATE_GRANT } from './late-grant.js';
import { monotonicNow, validUntil } from './lease.js';
import { observingHandoffs, publishHandoff, traceAcquire, tracingAcquires } from './lock-diagnostics.js';
import type { Won } from './waiter.js';

/** What a local release needs to hand the lock to a waiting caller directly. */
interface GrantTicket {
  readonly owner: string;
  readonly leaseMs: number | undefined;
  readonly renewed: boolean;
  readonly budget: HoldBudget | undefined;
  readonly label: string | undefined;
  readonly traceId: string | undefined;
  readonly acquiredAt: HoldOrigin['acquiredAt'];
}

/**
 * A lock of any kind on any backend: the kind says who owns a hold and how waiters are admitted, the
 * resource talks to the backend, the client's core supplies the waiters, the watchdog and the events.
 * Acquisition is a fast try, then the generic wait loop; holds are Hold objects with an optional lease.
 */
export class CoreLock extends HoldingLock implements Lock {
  /** Whether the backend stores holder metadata for this kind; undefined until the first attempt. */
  private holderStored: boolean | undefined;

  /** Whether attempts hand the backend holder metadata: asked once, when the first attempt is made. */
  private storesHolder(): boolean {
    return (this.holderStored ??= this.core.storesHolder(this.kind.name));
  }

  // acquire and tryAcquire are not async themselves: each async layer on the hot path costs a promise
  // and a microtask per call. Invalid options still come back as a rejected promise.
  acquire(options?: AcquireOptions): Promise<LockHandle> {
    let resolved: ResolvedAcquireOptions;
    try {
      resolved = resolveAcquireOptions(options, Infinity);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    if (this.core.acquireStacks) resolved.acquiredAt = stackAt(this.acquire);
    if (tracingAcquires()) {
      return this.traced(resolved, () => this.acquireWith(resolved, true) as Promise<HoldHandle>);
    }
    return this.acquireWith(resolved, true) as Promise<HoldHandle>;
  }

  tryAcquire(options?: AcquireOptions): Promise<LockHandle | undefined> {
    let resolved: ResolvedAcquireOptions;
    try {
      resolved = resolveAcquireOptions(options, 0);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    if (this.core.acquireStacks) resolved.acquiredAt = stackAt(this.tryAcquire);
    if (tracingAcquires()) return this.traced(resolved, () => this.tryWith(resolved));
    return this.tryWith(resolved);
  }

  private tryWith(resolved: ResolvedAcquireOptions): Promise<HoldHandle | undefined> {
    const attempt = this.acquireWith(resolved, false);
    if (!this.kind.upgradeRefused) return attempt;
    // A read holder trying the write side cannot get it: "no", as Redisson's tryLock() answers,
    // where acquire() throws LockUpgradeError (it would wait for its own read hold forever).
    return attempt.catch((error: unknown) => {
      if (error instanceof LockUpgradeError) return undefined;
      throw error;
    });
  }

  run<T>(fn: CriticalSection<T>, options?: RunOptions): Promise<T> {
    return runLocked(
      (o) => this.acquire(o),
      fn,
      options,
      (error) => this.core.reportError(error),
    );
  }

  async adopt(owner: string, options: AdoptOptions): Promise<LockHandle> {
    const acquiredAt = this.core.acquireStacks ? stackAt(this.adopt) : undefined;
    const { fencingToken, leaseMs, renewed, requestedAt } = await proveHold(
      this.core,
      this.resource,
      this.kind,
      owner,
      options,
    );
    return this.newHold(owner, fencingToken, leaseMs, renewed, requestedAt, undefined, { acquiredAt });
  }

  async isLocked(): Promise<boolean> {
    return (await this.inspect()).held;
  }

  async inspect(): Promise<LockInfo> {
    this.core.assertOpen(this.name);
    return this.resource.inspect().catch((error: unknown) => {
      throw backendError(this.name, error);
    });
  }

  /** An acquire someone listens to (see lock-diagnostics.ts). */
  private traced<H extends HoldHandle | undefined>(
    options: ResolvedAcquireOptions,
    acquire: () => Promise<H>,
  ): Promise<H> {
    // The owner is chosen now rather than in acquireWith (the same choice), so the start names it.
    const owner = (options.owner ??= this.ownerFor(options));
    return traceAcquire(this, owner, options, acquire);
  }

  protected ownerFor(options: ResolvedAcquireOptions): string {
    if (options.owner !== undefined) return options.owner;
    return this.kind.defaultOwner === 'task' ? (currentTaskOwner() ?? newOwnerId()) : newOwnerId();
  }

  /** The hold, or undefined when the wait ran out — a LockTimeoutError instead if `orThrow`. */
  private async acquireWith(
    options: ResolvedAcquireOptions,
    orThrow: boolean,
  ): Promise<HoldHandle | undefined> {
    this.core.assertOpen(this.name);
    const { signal, waitMs } = options;
    if (signal?.aborted) throw new LockAbortedError(this.name, signal.reason);
    const gated = this.core.serverGate?.enter(this.name);
    if (gated !== undefined) await gated;
    const startedAt = monotonicNow();
    const owner = this.ownerFor(options);
    if (options.leaseMs !== undefined && this.resource.leases === 'none') {
      throw new InvalidLockOptionError(
        'leaseMs',
        `left out: a ${this.kind.name} has no lease`,
        options.leaseMs,
      );
    }
    const renewed = options.leaseMs === undefined && this.resource.leases === 'renewable';
    const leaseMs = renewed ? this.core.watchdog.timeoutMs : options.leaseMs;
    const { waiters, holds } = this.core;
    const key = this.resource.waitKey;
    // Fast path: nobody of ours waits (or the caller will not wait), so try right away. An owner that
    // already holds the lock (re-entry) tries first too: queueing behind waiters that wait for its own
    // release would deadlock.
    const reentering = this.kind.reentrant && holds.has(key, owner);
    let refused: Busy | undefined;
    if (waitMs === 0 || reentering || !waiters.hasWaiters(key)) {
      // Where the backend keeps every waiter in order ('server-order'), a caller that will wait says
      // so from its first try and keeps the place it takes (a ZooKeeper node, an etcd key): a try
      // that left the queue and joined it again at the back would let a reader that came later pass
      // a waiting writer, or a later waiter pass it in a fair queue. In a local-fifo room only the
      // head may wait on the server (a waiter behind it that the server granted would block it).
      const queues = waitMs !== 0 && (this.resource.ordering ?? this.kind.ordering) === 'server-order';
      let first: Won<HoldHandle> | Busy;
      try {
        first = await this.attempt(owner, leaseMs, renewed, queues, options);
      } catch (error) {
        // The try may have queued the caller before it failed: its place must not outlive it.
        if (queues) this.resource.leave(owner, false, !waiters.hasWaiters(key));
        // A try the client's close() cut short fails as a closed client's, not as the backend's.
        this.core.assertOpen(this.name);
        throw error;
      }
      if (!(first instanceof Busy)) return this.delivered(first.value);
      if (queues)
        refused = first; // the wait below sleeps on its watch
      else first.watch?.cancel(); // a backend should set none for a try that is not waited on
      if (waitMs === 0) {
        if (orThrow) throw new LockTimeoutError(this.name, waitMs, this.resource.unreachable?.());
        return undefined;
      }
    }
    const { budget, label, traceId, acquiredAt } = options;
    const ticket: GrantTicket = { owner, leaseMs, renewed, budget, label, traceId, acquiredAt };
    const hold = await waiters.wait<HoldHandle, GrantTicket>({
      key,
      lockName: this.name,
      channel: this.resource.wakeChannel,
      ordering: this.resource.ordering ?? this.kind.ordering,
      owner,
      ticket,
      attempt: () => this.attempt(owner, leaseMs, renewed, true, options),
      refused,
      deadline: waitMs === Infinity ? Infinity : startedAt + waitMs,
      signal,
      abandon: (hold) => void hold.release().catch((error: unknown) => this.core.reportError(error)),
      heldUntil: (handle) => handle.hold.lease?.validUntil ?? Infinity,
      // Holds with a lease end without a release (and so without a wake-up) when it runs out.
      idleRecheckMs: this.resource.leases === 'renewable' ? leaseMs : undefined,
      leave: (won, lastOfClient) => this.resource.leave(owner, won, lastOfClient),
    });
    if (hold === undefined && orThrow) {
      throw new LockTimeoutError(this.name, waitMs, this.resource.unreachable?.());
    }
    return hold;
  }

  /** A hold won by the fast path, unless the client closed meanwhile: then it is given back. */
  private delivered(hold: HoldHandle): HoldHandle {
    try {
      this.core.assertOpen(this.name);
    } catch (error) {
      hold.release().catch((failure: unknown) => this.core.reportError(failure));
      throw error;
    }
    return hold;
  }

  private async attempt(
    owner: string,
    leaseMs: number | undefined,
    renewed: boolean,
    waiting: boolean,
    options: Pick<ResolvedAcquireOptions, 'budget' | 'label' | 'traceId' | 'acquiredAt'>,
  ): Promise<Won<HoldHandle> | Busy> {
    const { budget, label, traceId } = options;
    const requestedAt = monotonicNow();
    const holder = this.storesHolder() ? holderNow(label, traceId) : undefined;
    let result: AttemptResult;
    try {
      result = await this.resource.attempt({ owner, leaseMs, waiting, holder });
    } catch (error) {
      throw backendError(this.name, error); // try/catch, not .catch(): no extra promise per attempt
    }
    // Granted first: this copy's grant passes the plain prototype test at once, where a Busy check
    // of a grant walks its prototype chain for another copy's class (brand.ts) on every uncontended pair.
    if (!(result instanceof Granted)) {
      if (result instanceof Busy) return result;
      // Neither of ours (another copy's of another SPI version, or no result at all): never a grant.
      throw new ForeignBackendResultError(this.name, this.core.backendName, spiVersionOf(result));
    }
    let trustedFrom = requestedAt;
    if (leaseMs !== undefined && monotonicNow() >= validUntil(requestedAt, leaseMs)) {
      // The answer came after the lease it granted could be trusted (a latency spike, a paused
      // client): another owner may hold the lock by now. Never hand out a hold that may be over
      // (Redlock's validity rule, for every backend): confirm it, or give it back and call the try
      // refused.
      const confirmedAt = await confirmLateGrant(this.resource, owner, leaseMs, this.core.reportError);
      if (confirmedAt === undefined) return LATE_GRANT;
      trustedFrom = confirmedAt;
    }
    const handle = this.newHold(owner, result.token, leaseMs, renewed, trustedFrom, budget, options);
    // The store ended the hold behind our back (its node deleted): lost now, not on a renewal. The
    // watch keeps the hold, never the handle (handle.ts).
    const { hold } = handle;
    void result.lost?.then((reason) => hold.markLost(reason)); // markLost never throws
    return { value: handle, more: result.more };
  }

  // HoldBackend: what holds call back into (the rest is HoldingLock's).

  // Backend failures become LockBackendErrors by try/catch around each await, not by .catch() on a
  // wrapper: one promise per release instead of three.
  async release(hold: Hold): Promise<ReleaseOutcome> {
    const { waiters } = this.core;
    const key = this.resource.waitKey;
    const claim = this.resource.handsOff ? waiters.claimHandOff<GrantTicket>(key) : undefined;
    if (!claim) {
      const requestedAt = monotonicNow();
      const leaseLive = hold.lease !== undefined && requestedAt < hold.lease.validUntil;
      let result: ReleaseResult;
      try {
        result = await this.resource.release(hold.owner, undefined, leaseLive);
      } catch (error) {
        throw backendError(this.name, error);
      }
      if (result.handedOffOwner !== undefined && result.handedOffToken !== undefined) {
        this.grantTo(result.handedOffOwner, result.handedOffToken, requestedAt, hold.owner);
      }
      // No wake-ups come from a backend without a channel: tell this client's waiters ourselves —
      // unless the backend queues its waiters and wakes the next one itself (a watch per waiter):
      // poking them all would make every local waiter try again on every release (a herd).
      if (this.resource.wakeChannel === undefined && this.resource.ordering !== 'server-order') {
        waiters.notGranted(key);
      }
      return result.outcome;
    }
    // A local waiter queues: the backend may hand it the lock in the release itself.
    const next = claim.ticket;
    const requestedAt = monotonicNow();
    const holder = this.storesHolder() ? holderNow(next.label, next.traceId) : undefined;
    const offer = { owner: next.owner, leaseMs: next.leaseMs, holder };
    let result: ReleaseResult;
    try {
      result = await this.resource.release(hold.owner, offer);
    } catch (error) {
      throw backendError(this.name, error);
    }
    if (result.handedOffToken !== undefined) {
      const granted = this.newHold(
        next.owner,
        result.handedOffToken,
        next.leaseMs,
        next.renewed,
        requestedAt,
        next.budget,
        next,
      );
      if (!waiters.granted(key, claim, granted)) {
        granted.release().catch((error: unknown) => this.core.reportError(error)); // the waiter gave up
      } else if (observingHandoffs()) publishHandoff(this, hold.owner, granted, 'local');
      return result.outcome;
    }
    if (result.outcome === 'expired' || result.outcome === 'not_owner') waiters.notGranted(key);
    return result.outcome;
  }

  /** The backend handed the lock to a waiter of ours by owner: give it the hold, or pass it on. */
  private grantTo(owner: string, token: number, requestedAt: number, from: string): void {
    const { waiters } = this.core;
    const key = this.resource.waitKey;
    const claim = waiters.claimOwner<GrantTicket>(key, owner);
    const report = (error: unknown) => this.core.reportError(error);
    if (!claim) {
      void this.resource.release(owner, undefined).catch(report); // it gave up meanwhile
      return;
    }
    const next = claim.ticket;
    const { leaseMs, renewed, budget } = next;
    const granted = this.newHold(next.owner, token, leaseMs, renewed, requestedAt, budget, next);
    if (!waiters.granted(key, claim, granted)) granted.release().catch(report);
    else if (observingHandoffs()) publishHandoff(this, from, granted, 'server');
  }
}
