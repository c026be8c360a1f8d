import {
  Busy,
  Granted,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type LockHolder,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { ANY, leaseEnd, LockState, renewOnReentry, type LocalHold, type LocalStore } from './store.js';

const RELEASED: ReleaseResult = Object.freeze({ outcome: 'released' });
const STILL_HELD: ReleaseResult = Object.freeze({ outcome: 'still_held' });
const EXPIRED: ReleaseResult = Object.freeze({ outcome: 'expired' });
const NOT_OWNER: ReleaseResult = Object.freeze({ outcome: 'not_owner' });

/** What every local resource shares: its store, its state's key and its wake-up channel. */
export abstract class LocalResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string | undefined;
  readonly handsOff = false;
  abstract readonly leases: 'renewable' | 'none';

  constructor(
    protected readonly store: LocalStore,
    readonly name: string,
    /** The state's key: one per lock, shared by both sides of a read-write lock. */
    protected readonly key: string,
    wakes: boolean,
  ) {
    this.waitKey = key;
    this.wakeChannel = wakes ? `${key}:wake` : undefined;
  }

  abstract attempt(request: AttemptRequest): Promise<AttemptResult>;
  abstract inspect(): Promise<LockInfo>;

  /** The holds this resource owns in its state (holders, or readers). */
  protected abstract holds(state: LockState): Map<string, LocalHold>;

  protected get state(): LockState {
    return this.store.state(this.key);
  }

  async release(owner: string): Promise<ReleaseResult> {
    const state = this.state;
    state.prune();
    const holds = this.holds(state);
    const hold = holds.get(owner);
    if (!hold) {
      this.store.tidy(this.key, state);
      return holds.size > 0 ? NOT_OWNER : EXPIRED;
    }
    if (--hold.count > 0) return STILL_HELD;
    holds.delete(owner);
    this.freed(state, owner);
    this.store.tidy(this.key, state);
    return RELEASED;
  }

  async extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    const state = this.state;
    state.prune();
    const holds = this.holds(state);
    const hold = holds.get(owner);
    if (!hold) return holds.size > 0 ? 'taken' : 'expired';
    hold.until = leaseEnd(leaseMs);
    return 'extended';
  }

  leave(_owner: string, _won: boolean, _lastOfClient: boolean): void {
    // Nothing queued in the store by default.
  }

  async holdCount(owner: string): Promise<number> {
    const state = this.state;
    state.prune();
    return this.holds(state).get(owner)?.count ?? 0;
  }

  /** Ends every hold of this resource (forceUnlock); true if there was one. */
  forceUnlock(): boolean {
    const state = this.state;
    const holds = this.holds(state);
    const held = holds.size > 0;
    holds.clear();
    this.freed(state, undefined);
    this.store.tidy(this.key, state);
    return held;
  }

  /** A hold ended: wake whoever may take it now. */
  protected freed(_state: LockState, _owner: string | undefined): void {
    if (this.wakeChannel !== undefined) this.store.publish(this.wakeChannel, ANY);
  }

  /** A refusal: try again when the longest lease of `holds` ends (or when woken). */
  protected busy(holds: Map<string, LocalHold>): Busy {
    return new Busy(LockState.remainingMs(holds));
  }

  protected grant(holds: Map<string, LocalHold>, { owner, leaseMs, holder }: AttemptRequest, more: boolean) {
    const token = this.store.nextToken(this.name);
    holds.set(owner, { count: 1, token, until: leaseEnd(leaseMs), holder });
    return new Granted(token, more);
  }
}

/**
 * An exclusive lock: the mutex (a fresh owner per acquire), the reentrant lock (the same owner
 * re-enters and keeps its token) and the spin lock (reentrant, waiters back off: no wake channel).
 */
export class LocalExclusive extends LocalResource {
  readonly leases = 'renewable' as const;

  constructor(store: LocalStore, name: string, key: string, wakes: boolean) {
    super(store, name, key, wakes);
  }

  protected holds(state: LockState): Map<string, LocalHold> {
    return state.holders;
  }

  async attempt(request: AttemptRequest): Promise<AttemptResult> {
    const { owner, leaseMs } = request;
    const state = this.state;
    state.prune();
    const held = state.holders.get(owner);
    if (held) {
      held.count++; // re-entry (the core only re-enters reentrant kinds' owners)
      renewOnReentry(held, leaseMs);
      return new Granted(held.token, false);
    }
    if (state.holders.size > 0) return this.busy(state.holders);
    return this.grant(state.holders, request, false);
  }

  async inspect(): Promise<LockInfo> {
    const state = this.state;
    state.prune();
    const holders = state.holders.size;
    return {
      held: holders > 0,
      holders,
      remainingMs: LockState.remainingMs(state.holders),
      heldBy: LockState.heldBy(state.holders),
    };
  }

  /** Who holds it and with which token: the generic client's election reads its leader here. */
  async readHolder(): Promise<LockHolder | undefined> {
    const state = this.state;
    state.prune();
    for (const [owner, hold] of state.holders) return { owner, fencingToken: hold.token };
    return undefined;
  }
}

/**
 * A reentrant lock granted in arrival order across every client of the store: waiters queue in the
 * store, and a release wakes the next one by name. Nobody else may take a free lock while a waiter is
 * ahead of it.
 */
export class LocalFair extends LocalExclusive {
  readonly ordering = 'server-order' as const;

  constructor(store: LocalStore, name: string, key: string) {
    super(store, name, key, true);
  }

  override async attempt(request: AttemptRequest): Promise<AttemptResult> {
    const { owner, waiting } = request;
    const state = this.state;
    state.prune();
    const queued = state.queue.indexOf(owner);
    const first = state.queue.length === 0 || queued === 0;
    if (!state.holders.has(owner) && (state.holders.size > 0 || !first)) {
      if (waiting && queued < 0) state.queue.push(owner);
      return this.busy(state.holders);
    }
    if (queued >= 0) state.queue.splice(queued, 1);
    return super.attempt(request);
  }

  override leave(owner: string): void {
    const state = this.state;
    const at = state.queue.indexOf(owner);
    if (at < 0) return;
    state.queue.splice(at, 1);
    if (at === 0) this.freed(state, owner); // the next one may be first now
  }

  protected override freed(state: LockState, _owner?: string): void {
    const next = state.queue[0];
    if (next !== undefined && this.wakeChannel !== undefined && state.holders.size === 0) {
      this.store.publish(this.wakeChannel, { to: 'owner', owner: next });
    }
  }
}
