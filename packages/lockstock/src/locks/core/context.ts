import type { EventEmitter } from 'node:events';
import { LockClientClosedError } from '../errors.js';
import type { LockClientEvents } from '../types.js';
import type { SubscribeWakes } from './backend.js';
import { Waiters } from './waiter.js';
import { Watchdog } from './watchdog.js';

/**
 * Live holds per lock and owner, in this client: a reentrant owner that already holds a lock must try
 * it at once instead of queueing behind local waiters that wait for its own release (a deadlock).
 * Entries exist exactly as long as holds do, so this never needs evicting (unlike lock objects, which
 * are cached and may be dropped at any time).
 */
export class LiveHolds {
  private readonly byLock = new Map<string, Map<string, number>>();

  has(key: string, owner: string): boolean {
    return this.byLock.get(key)?.has(owner) ?? false;
  }

  add(key: string, owner: string): void {
    let owners = this.byLock.get(key);
    if (!owners) this.byLock.set(key, (owners = new Map()));
    owners.set(owner, (owners.get(owner) ?? 0) + 1);
  }

  remove(key: string, owner: string): void {
    const owners = this.byLock.get(key);
    const count = owners?.get(owner);
    if (!owners || count === undefined) return;
    if (count > 1) owners.set(owner, count - 1);
    else if (owners.delete(owner) && owners.size === 0) this.byLock.delete(key);
  }
}

/** What every lock of one client shares, whatever its kind and backend. */
export interface LockCore {
  readonly watchdog: Watchdog;
  readonly waiters: Waiters;
  readonly holds: LiveHolds;
  readonly events: EventEmitter<LockClientEvents>;
  /** Throws LockClientClosedError after close(). */
  assertOpen(lockName: string): void;
  /** Background failures (a release nobody awaits) go to the `connectionError` event. */
  reportError(error: unknown): void;
}

/** The core of a client of any backend; `isClosed` is asked on every call. */
export function createLockCore(
  events: EventEmitter<LockClientEvents>,
  options: {
    watchdogTimeoutMs: number;
    localHandoffWindowMs: number;
    subscribe: SubscribeWakes;
    isClosed: () => boolean;
  },
): LockCore {
  const reportError = (error: unknown) =>
    events.emit('connectionError', error instanceof Error ? error : new Error(String(error)));
  return {
    watchdog: new Watchdog(options.watchdogTimeoutMs, {
      renewed: (hold) =>
        events.emit('renewed', { name: hold.name, owner: hold.owner, fencingToken: hold.fencingToken }),
      renewalFailed: (hold, error) =>
        events.emit('renewalFailed', { name: hold.name, owner: hold.owner, error }),
    }),
    waiters: new Waiters(options.subscribe, options.localHandoffWindowMs),
    holds: new LiveHolds(),
    events,
    assertOpen: (name) => {
      if (options.isClosed()) throw new LockClientClosedError(name);
    },
    reportError,
  };
}

/** Stops what a core runs in the background (renewals, subscriptions); held locks then expire. */
export function stopLockCore(core: LockCore): void {
  core.watchdog.stop();
  core.waiters.close();
}
