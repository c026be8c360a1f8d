import type { ServerGate } from './server-gate.js';
import type { EventEmitter } from 'node:events';
import { LockClientClosedError, type LockLostReason } from '../errors.js';
import type { LockClientEvents } from '../types.js';
import type { SubscribeWakes } from './backend.js';
import { Waiters } from './waiter.js';
import { Watchdog } from './watchdog.js';
import { familyOf, type KindName } from './kind.js';
import type { LockFamily } from './family.js';

/**
 * Live holds per lock and owner, in this client: a reentrant owner that already holds a lock must try
 * it at once instead of queueing behind local waiters that wait for its own release (a deadlock).
 * Entries exist exactly as long as holds do, so this never needs evicting (unlike lock objects, which
 * are cached and may be dropped at any time).
 */
export class LiveHolds {
  // Most locks have one holding owner in a client: that case is a plain entry, without a Map of its
  // own to allocate per acquire (and collect per release). Owners of the same lock share a Map.
  private readonly byLock = new Map<string, OneOwner | Map<string, number>>();

  has(key: string, owner: string): boolean {
    const held = this.byLock.get(key);
    if (held === undefined) return false;
    return held instanceof Map ? held.has(owner) : held.owner === owner;
  }

  add(key: string, owner: string): void {
    const held = this.byLock.get(key);
    if (held === undefined) this.byLock.set(key, { owner, count: 1 });
    else if (held instanceof Map) held.set(owner, (held.get(owner) ?? 0) + 1);
    else if (held.owner === owner) held.count++;
    else
      this.byLock.set(
        key,
        new Map([
          [held.owner, held.count],
          [owner, 1],
        ]),
      );
  }

  remove(key: string, owner: string): void {
    const held = this.byLock.get(key);
    if (held === undefined) return;
    if (!(held instanceof Map)) {
      if (held.owner !== owner) return;
      if (--held.count === 0) this.byLock.delete(key);
      return;
    }
    const count = held.get(owner);
    if (count === undefined) return;
    if (count > 1) held.set(owner, count - 1);
    else if (held.delete(owner) && held.size === 0) this.byLock.delete(key);
  }
}

/** The only owner holding a lock in this client, and how many holds it has. */
interface OneOwner {
  readonly owner: string;
  count: number;
}

/** A hold as the session sees it: one it can mark lost. */
export interface SessionBound {
  markLost(reason: LockLostReason, cause?: unknown): void;
}

/** What every lock of one client shares, whatever its kind and backend. */
export interface LockCore {
  readonly watchdog: Watchdog;
  readonly waiters: Waiters;
  readonly holds: LiveHolds;
  /** Holds without a lease of their own: they last as long as the backend's session. */
  readonly sessionHolds: Set<SessionBound>;
  /** The backend's session ended (or cannot be trusted): every hold it carried is lost, at once. */
  sessionLost(cause?: unknown): void;
  readonly events: EventEmitter<LockClientEvents>;
  /** The backend's name (LockBackend.name), for the diagnostics messages. */
  readonly backendName: string;
  /** Whether acquires capture their caller's stack (LockClientOptions.acquireStacks). */
  readonly acquireStacks: boolean;
  /**
   * Whether the backend stores holder metadata for locks of this kind (capabilities.holderMetadata):
   * only then does an attempt build the record (host, pid, label, trace id, when) to hand it.
   */
  storesHolder(kind: KindName): boolean;
  /** Throws LockClientClosedError after close(). */
  assertOpen(lockName: string): void;
  /** Background failures (a release nobody awaits) go to the `connectionError` event. */
  reportError(error: unknown): void;
  /** The first acquire's server check (set by the client once its backend is open). */
  serverGate: ServerGate | undefined;
}

/** The core of a client of any backend; `isClosed` is asked on every call. */
export function createLockCore(
  events: EventEmitter<LockClientEvents>,
  options: {
    watchdogTimeoutMs: number;
    acquireStacks: boolean;
    subscribe: SubscribeWakes;
    isClosed: () => boolean;
    /** Asked once the backend is open (the core is made before it). */
    backendName: () => string;
    /** The backend's capabilities.holderMetadata; asked once the backend is open, like backendName. */
    holderFamilies: () => readonly LockFamily[] | undefined;
  },
): LockCore {
  const reportError = (error: unknown) =>
    events.emit('connectionError', error instanceof Error ? error : new Error(String(error)));
  const sessionHolds = new Set<SessionBound>();
  let backendName: string | undefined;
  let holderFamilies: ReadonlySet<LockFamily> | undefined;
  return {
    sessionHolds,
    sessionLost: (cause) => {
      const lost = [...sessionHolds];
      sessionHolds.clear();
      for (const hold of lost) hold.markLost('session_lost', cause);
    },
    watchdog: new Watchdog(options.watchdogTimeoutMs, {
      renewed: (hold) =>
        events.emit('renewed', { name: hold.name, owner: hold.owner, fencingToken: hold.fencingToken }),
      renewalFailed: (hold, error) =>
        events.emit('renewalFailed', { name: hold.name, owner: hold.owner, error }),
    }),
    waiters: new Waiters(options.subscribe),
    holds: new LiveHolds(),
    events,
    acquireStacks: options.acquireStacks,
    get backendName() {
      return (backendName ??= options.backendName());
    },
    storesHolder: (kind) => {
      holderFamilies ??= new Set(options.holderFamilies() ?? []);
      return holderFamilies.has(familyOf(kind));
    },
    assertOpen: (name) => {
      if (options.isClosed()) throw new LockClientClosedError(name);
    },
    reportError,
    serverGate: undefined,
  };
}

/**
 * Stops what a core runs in the background (renewals, subscriptions). Every hold the watchdog renewed
 * or the session carried is lost at once (reason 'client_closed'): nothing renews it any more and the
 * session ends, so its signal must not go on saying it is held until the store ends it behind the
 * holder's back. Holds with an explicit lease keep it: it was never renewed, and still ends on time.
 */
export function stopLockCore(core: LockCore): void {
  const holds: SessionBound[] = [...core.watchdog.stop(), ...core.sessionHolds];
  core.sessionHolds.clear();
  core.waiters.close();
  for (const hold of holds) hold.markLost('client_closed');
}
