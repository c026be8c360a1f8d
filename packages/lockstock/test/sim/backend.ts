import {
  BackendUnreachableError,
  Busy,
  Granted,
  type AttemptRequest,
  type AttemptResult,
  type BackendCapabilities,
  type BackendHost,
  type ExtendStatus,
  type LockBackend,
  type LockHolder,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
  type Wake,
} from '../../src/backend/index.js';
import type { CountDownLatch } from '../../src/index.js';
import type { Rng } from './random.js';
import type { Actor, Scheduler } from './scheduler.js';
import { SimLatch } from './latch.js';
import type { LockState, SimStore, StoreHold } from './store.js';

/** The network between one client and the store, as the scheduler varies it. */
export interface Network {
  /** Each message (request, reply, wake-up) takes 0..maxDelayMs. */
  readonly maxDelayMs: number;
  /** A request or its reply is lost: the call fails after `timeoutMs` (BackendUnreachableError). */
  readonly lossRate: number;
  /** A wake-up arrives twice. */
  readonly duplicateRate: number;
  /** A wake-up is lost (lease mode only: a waiter then looks again when the holder's lease ends). */
  readonly wakeLossRate: number;
  readonly timeoutMs: number;
  /**
   * Requests (and replies) of one client may overtake each other, as on a pool of connections or
   * multiplexed streams; otherwise they keep their order, as on one TCP connection.
   */
  readonly reorders: boolean;
}

export const QUIET: Network = {
  maxDelayMs: 3,
  lossRate: 0,
  duplicateRate: 0,
  wakeLossRate: 0,
  timeoutMs: 200,
  reorders: false,
};

/**
 * How holds end without a release. 'lease': renewable leases the store expires (Redis-like; the
 * watchdog renews). 'session': no leases; a client session carries every hold and waiter place
 * (ZooKeeper-like), and ends with the connection: a lost reply, or a session-loss fault. The client
 * hears of the loss (sessionLost) before the store drops what the session held — the rule a session
 * backend keeps by timing out its client side before the server side (ZooKeeper: a disconnected
 * client gives its session up before the server can expire it).
 */
export type HoldMode = 'lease' | 'session';

const RELEASED: ReleaseResult = { outcome: 'released' };
const STILL_HELD: ReleaseResult = { outcome: 'still_held' };
const EXPIRED: ReleaseResult = { outcome: 'expired' };
const NOT_OWNER: ReleaseResult = { outcome: 'not_owner' };

/**
 * The simulated backend of one client: implements the published SPI (`lockstock/backend`) over the
 * shared SimStore, every call a request and a reply through a faulty network. Each family's store
 * logic is small and plain: the simulation is about the core that runs over it.
 */
export class SimBackend implements LockBackend {
  readonly name = 'sim';
  readonly capabilities: BackendCapabilities;
  /** The current session (session mode); a new one starts after each loss. */
  session: number;
  private static sessions = 0;
  /** When the last request reaches the store, and the last reply the client (in-order delivery). */
  private requestsAt = 0;
  private repliesAt = 0;

  constructor(
    readonly host: BackendHost,
    readonly store: SimStore,
    readonly scheduler: Scheduler,
    readonly actor: Actor,
    readonly mode: HoldMode,
    readonly network: () => Network,
    private readonly rng: Rng,
  ) {
    this.session = ++SimBackend.sessions;
    this.capabilities = {
      leases: mode === 'lease' ? 'renewable' : 'session',
      fencing: 'counter',
      wakeUps: 'push',
      // No election factory: the generic client's election runs over the mutex (its readHolder).
      unsupported: {},
    };
  }

  readonly subscribe = (channel: string, onWake: (wake: Wake) => void): Promise<() => void> => {
    const unsubscribe = this.store.subscribe(channel, (wake) => {
      const net = this.network();
      if (this.mode === 'lease' && this.rng.chance(net.wakeLossRate)) return;
      const copies = this.rng.chance(net.duplicateRate) ? 2 : 1;
      for (let i = 0; i < copies; i++) this.scheduler.after(this.delay(), this.actor, () => onWake(wake));
    });
    return new Promise((resolve) =>
      this.scheduler.after(this.delay(), this.actor, () => resolve(unsubscribe)),
    );
  };

  /** One request to the store and its reply; `apply` runs at the store, atomically. */
  call<T>(apply: (session: number) => T, lossy = true): Promise<T> {
    const { scheduler, actor } = this;
    const net = this.network();
    const session = this.session;
    const lost =
      lossy && this.rng.chance(net.lossRate) ? this.rng.pick(['request', 'reply'] as const) : undefined;
    return new Promise<T>((resolve, reject) => {
      const timedOut = () =>
        scheduler.after(net.timeoutMs, actor, () => {
          // The connection is gone: its session with it (session mode), the client first.
          if (this.mode === 'session') this.connectionLost(session);
          reject(new BackendUnreachableError('sim', 'sim-store', 'ETIMEDOUT', `${lost} lost`));
        });
      scheduler.at(this.inOrder('request'), undefined, () => {
        if (lost === 'request') return void timedOut();
        let outcome: { value: T } | { error: unknown };
        if (this.mode === 'session' && session !== this.session) {
          outcome = { error: new BackendUnreachableError('sim', 'sim-store', undefined, 'session expired') };
        } else {
          try {
            outcome = { value: apply(session) };
          } catch (error) {
            outcome = { error };
          }
        }
        if (lost === 'reply') return void timedOut();
        scheduler.at(this.inOrder('reply'), actor, () => {
          // A reply of a session the client has given up is not trusted (its holds are gone).
          if (this.mode === 'session' && session !== this.session) {
            reject(new BackendUnreachableError('sim', 'sim-store', undefined, 'session expired'));
          } else if ('value' in outcome) resolve(outcome.value);
          else reject(outcome.error as Error);
        });
      });
    });
  }

  /** The session `session` is lost (if still current): the client hears first, then the store drops it. */
  connectionLost(session = this.session): void {
    if (this.mode !== 'session' || session !== this.session) return;
    this.session = ++SimBackend.sessions;
    this.host.sessionLost(new BackendUnreachableError('sim', 'sim-store', undefined, 'session lost'));
    this.store.endSession(session, (key) => `${key}:wake`);
  }

  /** When a message sent now arrives: after its delay, and (unless reordering) after the last one. */
  private inOrder(direction: 'request' | 'reply'): number {
    const at = this.scheduler.now + this.delay();
    if (this.network().reorders) return at;
    if (direction === 'request') return (this.requestsAt = Math.max(this.requestsAt, at));
    return (this.repliesAt = Math.max(this.repliesAt, at));
  }

  private delay(): number {
    return this.rng.next() * this.network().maxDelayMs;
  }

  private leases(): 'renewable' | 'none' {
    return this.mode === 'lease' ? 'renewable' : 'none';
  }

  mutex(name: string): LockResource {
    return new SimExclusive(
      this,
      name,
      `mutex:${name}`,
      { wakes: true, fair: false, reentrant: false },
      this.leases(),
    );
  }
  reentrant(name: string): LockResource {
    return new SimExclusive(
      this,
      name,
      `reentrant:${name}`,
      { wakes: true, fair: false, reentrant: true },
      this.leases(),
    );
  }
  spin(name: string): LockResource {
    return new SimExclusive(
      this,
      name,
      `spin:${name}`,
      { wakes: false, fair: false, reentrant: true },
      this.leases(),
    );
  }
  fair(name: string): LockResource {
    return new SimExclusive(
      this,
      name,
      `fair:${name}`,
      { wakes: true, fair: true, reentrant: true },
      this.leases(),
    );
  }
  readWrite(name: string): { read: LockResource; write: LockResource } {
    const key = `rw:${name}`;
    return {
      read: new SimRead(this, name, key, this.leases()),
      write: new SimWrite(this, name, key, this.leases()),
    };
  }
  semaphore(name: string, permits: number): LockResource {
    return new SimSemaphore(this, name, `semaphore:${name}`, permits, this.leases());
  }
  counterSemaphore(name: string, permits: number): LockResource {
    return new SimSemaphore(this, name, `counter:${name}`, permits, 'none');
  }

  countDownLatch(name: string): CountDownLatch {
    return new SimLatch(this, name);
  }

  forceUnlock(_made: LockResource | CountDownLatch): Promise<boolean> {
    return Promise.resolve(false);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** What every simulated resource shares: the call path, the state's key, the wake channel. */
abstract class SimResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string | undefined;
  readonly handsOff = false;

  constructor(
    protected readonly backend: SimBackend,
    readonly name: string,
    protected readonly key: string,
    wakes: boolean,
    readonly leases: 'renewable' | 'none',
  ) {
    this.waitKey = key;
    this.wakeChannel = wakes ? `${key}:wake` : undefined;
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

  release(owner: string): Promise<ReleaseResult> {
    return this.backend.call(() => {
      const state = this.state;
      if (this.store.prune(state)) this.freed(state);
      const holds = this.holds(state);
      let hold = holds.get(owner);
      if (!hold && this.store.mutations.releaseWithoutOwnerCheck) hold = holds.values().next().value;
      if (!hold) return holds.size > 0 ? NOT_OWNER : EXPIRED;
      if (--hold.count > 0) return STILL_HELD;
      holds.delete(hold.owner);
      this.freed(state);
      return RELEASED;
    });
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
    return new Granted(token, more);
  }
}

/** Mutex, reentrant, spin (no wake channel) and fair (a store-side queue, woken by name). */
class SimExclusive extends SimResource {
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
    super(backend, name, key, shape.wakes, leases);
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
class SimRead extends SimResource {
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
class SimWrite extends SimResource {
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
class SimSemaphore extends SimResource {
  constructor(
    backend: SimBackend,
    name: string,
    key: string,
    private readonly permits: number,
    leases: 'renewable' | 'none',
  ) {
    super(backend, name, key, true, leases);
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
    if (state.holders.size >= this.limit(state)) return new Busy(this.store.remainingMs(state.holders));
    return this.grant(state.holders, owner, leaseMs, session, state.holders.size + 1 < this.limit(state));
  }
}
