import { Busy, Granted, type AttemptRequest, type AttemptResult, type LockInfo } from '../backend/index.js';
import { LockUpgradeError, PermitsMismatchError } from '../locks/errors.js';
import { LocalResource } from './exclusive.js';
import { LockState, renewOnReentry, type LocalHold, type LocalStore } from './store.js';

/**
 * The shared side of a read-write lock: many readers, none while a writer holds or waits (a waiting
 * writer keeps new readers out, so readers cannot starve it); the write holder may read too
 * (downgrade), and a reader re-enters.
 */
export class LocalRead extends LocalResource {
  readonly leases = 'renewable' as const;

  constructor(store: LocalStore, name: string, key: string) {
    super(store, name, key, true);
  }

  protected holds(state: LockState): Map<string, LocalHold> {
    return state.readers;
  }

  async attempt(request: AttemptRequest): Promise<AttemptResult> {
    const { owner, leaseMs } = request;
    const state = this.state;
    state.prune();
    const held = state.readers.get(owner);
    if (held) {
      held.count++;
      renewOnReentry(held, leaseMs);
      return new Granted(held.token, true);
    }
    const writer = state.holders.size > 0 && !state.holders.has(owner);
    const writerWaits = state.writersWaiting.size > 0 && !state.holders.has(owner);
    if (writer) return this.busy(state.holders);
    if (writerWaits) return new Busy(undefined);
    return this.grant(state.readers, request, true);
  }

  async inspect(): Promise<LockInfo> {
    const state = this.state;
    state.prune();
    const holders = state.readers.size;
    return {
      held: holders > 0,
      holders,
      remainingMs: LockState.remainingMs(state.readers),
      heldBy: LockState.heldBy(state.readers),
    };
  }
}

/** The exclusive side: no other writer and no reader (but its own downgraded read). */
export class LocalWrite extends LocalResource {
  readonly leases = 'renewable' as const;

  constructor(store: LocalStore, name: string, key: string) {
    super(store, name, key, true);
  }

  protected holds(state: LockState): Map<string, LocalHold> {
    return state.holders;
  }

  async attempt(request: AttemptRequest): Promise<AttemptResult> {
    const { owner, leaseMs, waiting } = request;
    const state = this.state;
    state.prune();
    const held = state.holders.get(owner);
    if (held) {
      held.count++;
      renewOnReentry(held, leaseMs);
      return new Granted(held.token, false);
    }
    // It would wait for its own read hold forever (Redisson's upgrade deadlock): refuse.
    if (state.readers.has(owner)) throw new LockUpgradeError(this.name, owner);
    if (state.holders.size > 0 || state.readers.size > 0) {
      if (waiting) state.writersWaiting.add(owner);
      const blockers = state.holders.size > 0 ? state.holders : state.readers;
      return this.busy(blockers);
    }
    state.writersWaiting.delete(owner);
    return this.grant(state.holders, request, false);
  }

  override leave(owner: string): void {
    const state = this.state;
    // Readers held back for this writer may come in now.
    if (state.writersWaiting.delete(owner) && state.writersWaiting.size === 0) this.freed(state, owner);
    this.store.tidy(this.key, state);
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
}

/**
 * Up to `permits` holders. With leases (`semaphore`), a holder's permit comes back when its lease
 * ends; without (`counter-semaphore`), it is held until released. The first acquire stores the permit
 * count; a client made with another is refused (PermitsMismatchError), as on Redis.
 */
export class LocalSemaphore extends LocalResource {
  constructor(
    store: LocalStore,
    name: string,
    key: string,
    private readonly permits: number,
    readonly leases: 'renewable' | 'none',
  ) {
    super(store, name, key, true);
  }

  protected holds(state: LockState): Map<string, LocalHold> {
    return state.holders;
  }

  async attempt(request: AttemptRequest): Promise<AttemptResult> {
    const { owner, leaseMs } = request;
    const state = this.state;
    state.prune();
    state.permits ??= this.permits;
    if (state.permits !== this.permits)
      throw new PermitsMismatchError(this.name, this.permits, state.permits);
    const used = permitsUsed(state.holders);
    if (used >= state.permits) return this.busy(state.holders);
    const held = state.holders.get(owner);
    if (held) {
      held.count++; // the same owner again: one more permit under its name
      renewOnReentry(held, leaseMs);
      return new Granted(held.token, used + 1 < state.permits);
    }
    return this.grant(state.holders, request, used + 1 < state.permits);
  }

  /** Permits free by the count the store keeps, which setPermits of any client may have changed. */
  async available(): Promise<number> {
    const state = this.state;
    state.prune();
    return Math.max(0, (state.permits ?? this.permits) - permitsUsed(state.holders));
  }

  async setPermits(permits: number): Promise<void> {
    this.state.permits = permits;
    if (this.wakeChannel !== undefined) this.store.publish(this.wakeChannel, { to: 'any' });
  }

  async inspect(): Promise<LockInfo> {
    const state = this.state;
    state.prune();
    const holders = permitsUsed(state.holders);
    return {
      held: holders > 0,
      holders,
      remainingMs: LockState.remainingMs(state.holders),
      heldBy: LockState.heldBy(state.holders),
    };
  }
}

function permitsUsed(holders: Map<string, LocalHold>): number {
  let used = 0;
  for (const hold of holders.values()) used += hold.count;
  return used;
}
