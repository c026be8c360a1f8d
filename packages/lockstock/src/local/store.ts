import { monotonicNow, type HolderMetadata, type LockHolderInfo, type Wake } from '../backend/index.js';

/** One hold in the store: how many times its owner holds it, its token, when its lease ends. */
export interface LocalHold {
  count: number;
  readonly token: number;
  /** `monotonicNow()` at which the lease ends; Infinity without one. */
  until: number;
  /** Who took it (AttemptRequest.holder), for inspect(). */
  readonly holder?: HolderMetadata;
}

/** Everything one lock name holds in a store (each kind uses its own part). */
export class LockState {
  /** Exclusive holders (≤ 1), the writer, or a semaphore's permits: owner → hold. */
  readonly holders = new Map<string, LocalHold>();
  /** The readers of a read-write lock. */
  readonly readers = new Map<string, LocalHold>();
  /** Writers waiting for a read-write lock: new readers stay out while one waits. */
  readonly writersWaiting = new Set<string>();
  /** The fair lock's waiters, in arrival order. */
  readonly queue: string[] = [];
  /** A semaphore's permit count, stored by its first acquire. */
  permits: number | undefined;
  /** A count-down latch's count. */
  latch = 0;

  /** Drops holds whose lease has ended: true if any was dropped (waiters may try). */
  prune(now = monotonicNow()): boolean {
    let dropped = false;
    for (const holds of [this.holders, this.readers]) {
      for (const [owner, hold] of holds) {
        if (hold.until <= now) dropped = holds.delete(owner) || dropped;
      }
    }
    return dropped;
  }

  /** The holders of `holds` with their metadata, for inspect().heldBy. */
  static heldBy(holds: Map<string, LocalHold>): LockHolderInfo[] {
    return [...holds].map(([owner, hold]) => ({ owner, ...hold.holder }));
  }

  /** Time left on the longest lease of `holds`, ms (undefined: none, or no expiry). */
  static remainingMs(holds: Map<string, LocalHold>, now = monotonicNow()): number | undefined {
    let until = 0;
    for (const hold of holds.values()) until = Math.max(until, hold.until);
    return holds.size === 0 || until === Infinity ? undefined : Math.max(0, until - now);
  }
}

type Listener = (wake: Wake) => void;

/**
 * The in-process store of the local backend: lock states by key, a fencing counter per lock name, and
 * wake-up channels. Every step on it is synchronous, so it is atomic by construction (Node runs one
 * piece of JavaScript at a time). Clients of one process share a store by namespace, as code
 * synchronizing on one object shares its monitor; other processes see nothing of it.
 */
export class LocalStore {
  private static readonly namespaces = new Map<string, LocalStore>();
  private readonly states = new Map<string, LockState>();
  private readonly fences = new Map<string, number>();
  private readonly channels = new Map<string, Set<Listener>>();

  static shared(namespace: string): LocalStore {
    let store = LocalStore.namespaces.get(namespace);
    if (!store) LocalStore.namespaces.set(namespace, (store = new LocalStore()));
    return store;
  }

  state(key: string): LockState {
    let state = this.states.get(key);
    if (!state) this.states.set(key, (state = new LockState()));
    return state;
  }

  /** Forgets an empty state (a lock nobody holds or waits for keeps no memory). */
  tidy(key: string, state: LockState): void {
    if (
      state.holders.size === 0 &&
      state.readers.size === 0 &&
      state.writersWaiting.size === 0 &&
      state.queue.length === 0 &&
      state.permits === undefined &&
      state.latch === 0
    ) {
      this.states.delete(key);
    }
  }

  /** The next fencing token of `name`: every kind under one name shares the counter. */
  nextToken(name: string): number {
    const token = (this.fences.get(name) ?? 0) + 1;
    this.fences.set(name, token);
    return token;
  }

  /** The latest token issued for `name` (0: none). */
  lastToken(name: string): number {
    return this.fences.get(name) ?? 0;
  }

  publish(channel: string, wake: Wake): void {
    for (const listener of this.channels.get(channel) ?? []) listener(wake);
  }

  subscribe(channel: string, listener: Listener): () => void {
    let listeners = this.channels.get(channel);
    if (!listeners) this.channels.set(channel, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.channels.get(channel) === listeners) this.channels.delete(channel);
    };
  }
}

export const ANY: Wake = Object.freeze({ to: 'any' });

/** A hold's lease end from its requested lease (Infinity: no lease). */
export const leaseEnd = (leaseMs: number | undefined, now = monotonicNow()): number =>
  leaseMs === undefined ? Infinity : now + leaseMs;

/**
 * Re-entry (or the same owner's next permit): the core trusts the new hold for its `leaseMs` from
 * this request, so the lease must last at least that long — never shortened (Redis's reentrant
 * script does the same). Found by the simulation (test/sim/, mutation reentry-keeps-lease).
 */
export function renewOnReentry(held: LocalHold, leaseMs: number | undefined, now = monotonicNow()): void {
  held.until = Math.max(held.until, leaseEnd(leaseMs, now));
}
