import type { Wake } from '../../src/backend/index.js';

/**
 * Deliberate bugs the simulation must catch (see mutations.ts): each one breaks one rule of the
 * simulated store, as a backend's script or query could.
 */
export interface StoreMutations {
  /** release() ends a hold whoever asks: no owner check. */
  readonly releaseWithoutOwnerCheck?: boolean;
  /** A fair lock grants a free lock to whoever tries, ahead of the queue. */
  readonly fairOutOfOrder?: boolean;
  /** A semaphore admits one holder more than its permits. */
  readonly semaphoreOffByOne?: boolean;
  /** The fencing counter does not move on a new grant (the last token is handed out again). */
  readonly tokenNotIncreasing?: boolean;
  /** extend() brings back a hold whose lease has ended (when nobody else holds the lock). */
  readonly extendRevivesExpired?: boolean;
  /** A read lock is granted beside a writer. */
  readonly readBesideWriter?: boolean;
  /** A latch reads as released with one count left. */
  readonly latchOffByOne?: boolean;
  /** Re-entry adds a hold but leaves the lease as it was (the core trusts a fresh one). */
  readonly reentryKeepsLease?: boolean;
  /** A release with a hand-off offer hands the lock on whoever holds it (the owner check skipped there). */
  readonly handOffWithoutOwnerCheck?: boolean;
  /** A hand-off gives the waiter the releaser's fencing token instead of a new one. */
  readonly handOffReusesToken?: boolean;
  /** No wake-up is ever published: a freed lock waits for its waiters' own retries. */
  readonly silentRelease?: boolean;
}

/** One hold in the store. */
export interface StoreHold {
  readonly owner: string;
  count: number;
  readonly token: number;
  /** True time (ms) at which the lease ends; Infinity: none (the session or nothing ends it). */
  until: number;
  /** The client session that carries it (session mode), else 0. */
  readonly session: number;
}

/** One lock name's state: every family keeps what it needs here. */
export class LockState {
  readonly holders = new Map<string, StoreHold>();
  readonly readers = new Map<string, StoreHold>();
  /** Fair waiters in arrival order, or the writers waiting for a read-write lock. */
  readonly queue: string[] = [];
  /** Each queued waiter's session (its end removes them) and when its place lapses unless renewed. */
  readonly queuedBy = new Map<string, { readonly session: number; until: number }>();
  permits: number | undefined;
  /** Holds whose lease ended, kept only for the extendRevivesExpired mutation to bring back. */
  readonly ended = new Map<string, StoreHold>();
}

/**
 * The simulated lock store: what a Redis or a ZooKeeper would keep, in memory, run by the scheduler
 * in true virtual time. Every operation is one atomic step (a Lua script, a transaction). It knows
 * nothing of clients: it answers requests, keeps leases and sessions, issues fencing tokens, and
 * publishes wake-ups to whoever subscribed. What it did is what the history is recorded from.
 */
export class SimStore {
  private readonly states = new Map<string, LockState>();
  private readonly tokens = new Map<string, number>();
  private readonly subscribers = new Map<string, Set<(wake: Wake) => void>>();

  constructor(
    private readonly clock: () => number,
    readonly mutations: StoreMutations,
    /** Told when a waiter takes its place in a fair queue (the history's `queued` event). */
    private readonly onQueued: (owner: string, lock: string) => void,
    /**
     * A queued waiter keeps its place this long after its last try (Redisson's fair lock: a waiter's
     * entry times out), so a waiter that died without leaving cannot block the queue for ever. Its
     * retries renew it. Infinity in session mode: the session's end removes it.
     */
    private readonly queueTtlMs: number,
    /** Told when the store grants an owner the lock (the history's `offered` event). */
    private readonly onGranted: (owner: string, lock: string) => void = () => undefined,
  ) {}

  /** The store grants `owner` the lock `lock` (whether or not the reply ever reaches it). */
  granted(owner: string, lock: string): void {
    this.onGranted(owner, lock);
  }

  private sessions = 0;

  /** A new client session's number (each backend's, and after each loss). */
  newSession(): number {
    return ++this.sessions;
  }

  /** When a latch's count reached zero (true time), for the latch check. */
  latchZeroAt: number | undefined;

  now(): number {
    return this.clock();
  }

  state(key: string): LockState {
    let state = this.states.get(key);
    if (!state) this.states.set(key, (state = new LockState()));
    return state;
  }

  nextToken(name: string): number {
    const last = this.tokens.get(name) ?? 0;
    if (this.mutations.tokenNotIncreasing && last > 0) return last;
    this.tokens.set(name, last + 1);
    return last + 1;
  }

  /** Drops holds whose lease ended: true if any did. */
  prune(state: LockState): boolean {
    const now = this.clock();
    let dropped = false;
    for (const holds of [state.holders, state.readers]) {
      for (const [owner, hold] of holds) {
        if (hold.until > now) continue;
        holds.delete(owner);
        dropped = true;
        if (this.mutations.extendRevivesExpired) state.ended.set(owner, hold);
      }
    }
    for (const [owner, place] of state.queuedBy) {
      if (place.until <= now) dropped = this.dequeue(state, owner) >= 0 || dropped;
    }
    return dropped;
  }

  remainingMs(holds: Map<string, StoreHold>): number | undefined {
    let until = 0;
    for (const hold of holds.values()) until = Math.max(until, hold.until);
    return holds.size === 0 || until === Infinity ? undefined : Math.max(0, until - this.clock());
  }

  leaseEnd(leaseMs: number | undefined): number {
    return leaseMs === undefined ? Infinity : this.clock() + leaseMs;
  }

  enqueue(state: LockState, lock: string, owner: string, session: number): void {
    const until = this.clock() + this.queueTtlMs;
    const place = state.queuedBy.get(owner);
    if (place) {
      place.until = until;
      return;
    }
    state.queue.push(owner);
    state.queuedBy.set(owner, { session, until });
    this.onQueued(owner, lock);
  }

  dequeue(state: LockState, owner: string): number {
    const at = state.queue.indexOf(owner);
    if (at >= 0) {
      state.queue.splice(at, 1);
      state.queuedBy.delete(owner);
    }
    return at;
  }

  publish(channel: string | undefined, wake: Wake): void {
    if (channel === undefined || this.mutations.silentRelease) return;
    for (const listener of this.subscribers.get(channel) ?? []) listener(wake);
  }

  subscribe(channel: string, listener: (wake: Wake) => void): () => void {
    let listeners = this.subscribers.get(channel);
    if (!listeners) this.subscribers.set(channel, (listeners = new Set()));
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  /** A session ended: its holds and queue places go, and every lock it touched wakes its waiters. */
  endSession(session: number, channelOf: (key: string) => string | undefined): void {
    for (const [key, state] of this.states) {
      let changed = false;
      for (const holds of [state.holders, state.readers]) {
        for (const [owner, hold] of holds)
          if (hold.session === session) changed = holds.delete(owner) || changed;
      }
      for (const [owner, place] of state.queuedBy) {
        if (place.session === session) changed = this.dequeue(state, owner) >= 0 || changed;
      }
      if (changed) this.publish(channelOf(key), { to: 'any' });
    }
  }

  /** Everything held right now, for the end-of-run check that nothing leaked. */
  held(): Array<{ key: string; owner: string; until: number }> {
    const now = this.clock();
    const out: Array<{ key: string; owner: string; until: number }> = [];
    for (const [key, state] of this.states) {
      for (const holds of [state.holders, state.readers]) {
        for (const hold of holds.values())
          if (hold.until > now) out.push({ key, owner: hold.owner, until: hold.until });
      }
    }
    return out;
  }
}
