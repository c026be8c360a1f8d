import {
  Busy,
  Granted,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type HandOffOffer,
  type LockHolder,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../../src/backend/index.js';
import type { SimBackend } from './backend.js';
import type { LockState, SimStore, StoreHold } from './store.js';

/**
 * The simulated store's lock families as LockResources (lockstock/backend): each call one request to
 * the store through its client's SimBackend (delays, losses, sessions). The logic is small and plain —
 * the simulation is about the core that runs over it — and every rule a mutation breaks is here.
 */

const RELEASED: ReleaseResult = { outcome: 'released' };
const STILL_HELD: ReleaseResult = { outcome: 'still_held' };
const EXPIRED: ReleaseResult = { outcome: 'expired' };
const NOT_OWNER: ReleaseResult = { outcome: 'not_owner' };

/** What every simulated resource shares: the call path, the state's key, the wake channel. */
export abstract class SimResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string | undefined;
  /** Whether a release takes the core's offer (HandOffOffer) and grants the next waiter itself. */
  readonly handsOff: boolean;

  constructor(
    protected readonly backend: SimBackend,
    readonly name: string,
    protected readonly key: string,
    wakes: boolean,
    readonly leases: 'renewable' | 'none',
    handsOff = false,
  ) {
    this.waitKey = key;
    this.wakeChannel = wakes ? `${key}:wake` : undefined;
    this.handsOff = handsOff;
  }

  protected get store(): SimStore {
    return this.backend.store;
  }

  protected get state(): LockState {
    return this.store.state(this.key);
  }

  /** The holds this resource owns in its state. */
  protected abstract holds(state: LockState): Map<string, StoreHold>;
  protected abstract tryTake(state: LockState, request: AttemptRequest, session: number): AttemptResult;

  attempt(request: AttemptRequest): Promise<AttemptResult> {
    return this.backend.call((session) => {
      const state = this.state;
      if (this.store.prune(state)) this.freed(state);
      return this.tryTake(state, request, session);
    });
  }

  release(owner: string, offer?: HandOffOffer): Promise<ReleaseResult> {
    return this.backend.call((session) => {
      const state = this.state;
      if (this.store.prune(state)) this.freed(state);
      const holds = this.holds(state);
      const { mutations } = this.store;
      let hold = holds.get(owner);
      const anyone = mutations.releaseWithoutOwnerCheck || (offer && mutations.handOffWithoutOwnerCheck);
      if (!hold && anyone) hold = holds.values().next().value;
      if (!hold) return holds.size > 0 ? NOT_OWNER : EXPIRED;
      if (--hold.count > 0) return STILL_HELD;
      holds.delete(hold.owner);
      const handedOffToken = offer ? this.handOff(state, offer, hold, session) : undefined;
      if (handedOffToken !== undefined) return { outcome: 'released', handedOffToken };
      this.freed(state);
      return RELEASED;
    });
  }

  /**
   * The hand-off (as Redis's release scripts with client turns): the released hold passes straight to
   * the offered waiter of the releasing client, in the same step — unless the store's fairness policy
   * declines (Redis's 'yield' once the local streak is over and another client waits): drawn from the
   * client's seeded generator, so both paths run. Returns the new hold's token, or undefined.
   */
  private handOff(
    state: LockState,
    offer: HandOffOffer,
    from: StoreHold,
    session: number,
  ): number | undefined {
    const holds = this.holds(state);
    if (!this.handsOff || holds.has(offer.owner) || !this.admits(state) || this.backend.declinesHandOff())
      return undefined;
    const token = this.store.mutations.handOffReusesToken ? from.token : this.store.nextToken(this.name);
    holds.set(offer.owner, {
      owner: offer.owner,
      count: 1,
      token,
      until: this.store.leaseEnd(offer.leaseMs),
      session,
    });
    this.store.granted(offer.owner, this.name);
    return token;
  }

  extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    return this.backend.call(() => {
      const state = this.state;
      const holds = this.holds(state);
      if (this.store.prune(state)) this.freed(state);
      let hold = holds.get(owner);
      const ended = state.ended.get(owner);
      if (!hold && ended && this.admits(state)) holds.set(owner, (hold = ended)); // the mutation's
      state.ended.delete(owner);
      if (!hold) return holds.size > 0 ? 'taken' : 'expired';
      hold.until = this.store.leaseEnd(leaseMs);
      return 'extended';
    });
  }

  /** Whether a revived hold would fit (the revival mutation brings a hold back only where it could be). */
  protected admits(state: LockState): boolean {
    return this.holds(state).size === 0;
  }

  inspect(): Promise<LockInfo> {
    return this.backend.call(() => {
      const state = this.state;
      this.store.prune(state);
      const holds = this.holds(state);
      return { held: holds.size > 0, holders: holds.size, remainingMs: this.store.remainingMs(holds) };
    });
  }

  holdCount(owner: string): Promise<number> {
    return this.backend.call(() => {
      const state = this.state;
      this.store.prune(state);
      return this.holds(state).get(owner)?.count ?? 0;
    });
  }

  leave(owner: string): void {
    // Fire and forget, as the SPI says: a lost one leaves the place to the session's end (or to the
    // waiter's next try, which finds itself at the head).
    this.backend
      .call(() => {
        const state = this.state;
        if (this.store.dequeue(state, owner) === 0) this.freed(state);
      })
      .catch(() => undefined);
  }

  /** A hold ended: wake whoever may take it now. */
  protected freed(_state: LockState): void {
    this.store.publish(this.wakeChannel, { to: 'any' });
  }

  /**
   * Re-entry: one hold more, the holder's token, and a lease of at least `leaseMs` from now — the core
   * trusts the re-entry's hold for its lease from this request, as Redis's reentrant script ("never
   * shortens") allows.
   */
  protected reenter(held: StoreHold, leaseMs: number | undefined, more: boolean): Granted {
    held.count++;
    if (!this.store.mutations.reentryKeepsLease)
      held.until = Math.max(held.until, this.store.leaseEnd(leaseMs));
    return new Granted(held.token, more);
  }

  protected grant(
    holds: Map<string, StoreHold>,
    owner: string,
    leaseMs: number | undefined,
    session: number,
    more: boolean,
  ): Granted {
    const token = this.store.nextToken(this.name);
    holds.set(owner, { owner, count: 1, token, until: this.store.leaseEnd(leaseMs), session });
    this.store.granted(owner, this.name);
    return new Granted(token, more);
  }
}

/** Mutex, reentrant, spin (no wake channel) and fair (a store-side queue, woken by name). */
export class SimExclusive extends SimResource {
  readonly ordering: 'server-order' | undefined;

  private readonly fair: boolean;
  private readonly reentrant: boolean;

  constructor(
    backend: SimBackend,
    name: string,
    key: string,
    shape: { wakes: boolean; fair: boolean; reentrant: boolean },
    leases: 'renewable' | 'none',
  ) {
    // A fair lock's waiters are in the store's order (server-order): the core offers no hand-off.
    super(backend, name, key, shape.wakes, leases, backend.handsOff && !shape.fair);
    this.fair = shape.fair;
    this.reentrant = shape.reentrant;
    this.ordering = shape.fair ? 'server-order' : undefined;
  }

  protected holds(state: LockState): Map<string, StoreHold> {
    return state.holders;
  }

  protected tryTake(
    state: LockState,
    { owner, leaseMs, waiting }: AttemptRequest,
    session: number,
  ): AttemptResult {
    const held = state.holders.get(owner);
    // A mutex's owner that tries again (its late grant's give-back lost) is refused, as Redis's SET NX.
    if (held && this.reentrant) return this.reenter(held, leaseMs, false);
    if (this.fair) {
      const first =
        state.queue.length === 0 || state.queue[0] === owner || this.store.mutations.fairOutOfOrder;
      if (state.holders.size > 0 || !first) {
        if (waiting) this.store.enqueue(state, this.name, owner, session);
        return new Busy(this.store.remainingMs(state.holders));
      }
      this.store.dequeue(state, owner);
    } else if (state.holders.size > 0) return new Busy(this.store.remainingMs(state.holders));
    return this.grant(state.holders, owner, leaseMs, session, false);
  }

  /** The holder and its token in one step: the generic client's election reads its leader here. */
  readHolder(): Promise<LockHolder | undefined> {
    return this.backend.call(() => {
      const state = this.state;
      this.store.prune(state);
      for (const hold of state.holders.values()) return { owner: hold.owner, fencingToken: hold.token };
      return undefined;
    });
  }

  protected override freed(state: LockState): void {
    if (!this.fair) return super.freed(state);
    const next = state.queue[0];
    if (next !== undefined && state.holders.size === 0)
      this.store.publish(this.wakeChannel, { to: 'owner', owner: next });
  }
}

/** The read side: shared, kept out while a writer holds or waits (writers are not starved). */
export class SimRead extends SimResource {
  constructor(backend: SimBackend, name: string, key: string, leases: 'renewable' | 'none') {
    super(backend, name, key, true, leases);
  }

  protected holds(state: LockState): Map<string, StoreHold> {
    return state.readers;
  }

  protected override admits(state: LockState): boolean {
    return state.holders.size === 0;
  }

  protected tryTake(state: LockState, { owner, leaseMs }: AttemptRequest, session: number): AttemptResult {
    const held = state.readers.get(owner);
    if (held) return this.reenter(held, leaseMs, true);
    const writer = state.holders.size > 0 && !this.store.mutations.readBesideWriter;
    if (writer || state.queue.length > 0) return new Busy(this.store.remainingMs(state.holders));
    return this.grant(state.readers, owner, leaseMs, session, true);
  }
}

/** The write side: exclusive of readers and of another writer. */
export class SimWrite extends SimResource {
  constructor(backend: SimBackend, name: string, key: string, leases: 'renewable' | 'none') {
    super(backend, name, key, true, leases);
  }

  protected holds(state: LockState): Map<string, StoreHold> {
    return state.holders;
  }

  protected override admits(state: LockState): boolean {
    return state.holders.size === 0 && state.readers.size === 0;
  }

  protected tryTake(
    state: LockState,
    { owner, leaseMs, waiting }: AttemptRequest,
    session: number,
  ): AttemptResult {
    const held = state.holders.get(owner);
    if (held) return this.reenter(held, leaseMs, false);
    if (state.holders.size > 0 || state.readers.size > 0) {
      if (waiting) this.store.enqueue(state, this.name, owner, session);
      const readers = this.store.remainingMs(state.readers);
      const writer = this.store.remainingMs(state.holders);
      return new Busy(
        readers === undefined ? writer : writer === undefined ? readers : Math.max(readers, writer),
      );
    }
    this.store.dequeue(state, owner);
    return this.grant(state.holders, owner, leaseMs, session, false);
  }

  override leave(owner: string): void {
    this.backend
      .call(() => {
        const state = this.state;
        if (this.store.dequeue(state, owner) >= 0 && state.queue.length === 0) this.freed(state);
      })
      .catch(() => undefined);
  }
}

/** A semaphore of `permits` permits: leased ('renewable'), with the session, or counted ('none'). */
export class SimSemaphore extends SimResource {
  constructor(
    backend: SimBackend,
    name: string,
    key: string,
    private readonly permits: number,
    leases: 'renewable' | 'none',
  ) {
    super(backend, name, key, true, leases, backend.handsOff);
  }

  protected holds(state: LockState): Map<string, StoreHold> {
    return state.holders;
  }

  protected override admits(state: LockState): boolean {
    return state.holders.size < this.limit(state);
  }

  private limit(state: LockState): number {
    return (state.permits ?? this.permits) + (this.store.mutations.semaphoreOffByOne ? 1 : 0);
  }

  protected tryTake(state: LockState, { owner, leaseMs }: AttemptRequest, session: number): AttemptResult {
    state.permits ??= this.permits;
    // One permit per owner (Redis's ZADD NX): an owner whose hand-off crossed its own attempt gets no
    // second one, else the attempt's give-back would end the handed-off permit.
    if (state.holders.has(owner)) return new Busy(undefined);
    if (state.holders.size >= this.limit(state)) return new Busy(this.store.remainingMs(state.holders));
    return this.grant(state.holders, owner, leaseMs, session, state.holders.size + 1 < this.limit(state));
  }
}
