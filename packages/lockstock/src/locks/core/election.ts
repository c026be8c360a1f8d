import { clearTimer, setTimer } from '../../support/timer.js';
import { backendError, InvalidLockOptionError } from '../errors.js';
import { newOwnerId } from '../owner.js';
import type { Election, Leader, Lock, LockHandle, Term } from '../types.js';
import type { LockHolder, Watch } from './backend.js';

/** The leader, read with a watch that settles when it may have changed (a backend that can watch). */
export type WatchLeader = () => Promise<{ readonly leader: Leader | undefined; readonly changed: Watch }>;

/**
 * Longest value a candidate may proclaim. The value travels in the candidate's owner id (see
 * candidateOwner), and an owner id is at most 256 characters.
 */
export const MAX_LEADER_VALUE = 200;

/** Separates a candidate's unique id from its proclaimed value in its owner id. */
const VALUE_SEPARATOR = '|';

/**
 * The owner id a candidate holds the election's lock with: `<unique id>|<value>`. This is the one
 * place the leader's value is kept, by design: the owner id is the one thing every backend already
 * stores whole with a hold (and returns from `readHolder()`), so an election needs no field of its own
 * in any store. A unique id never contains `|` (see newOwnerId).
 */
export const candidateOwner = (value: string): string => `${newOwnerId()}${VALUE_SEPARATOR}${value}`;

/** The value a candidate proclaimed, from its owner id (undefined: not a candidate's owner id). */
export function proclaimedValue(owner: string): string | undefined {
  const at = owner.indexOf(VALUE_SEPARATOR);
  return at < 0 ? undefined : owner.slice(at + 1);
}

/** The leader a holder stands for: its proclaimed value and its fencing token (none: not a candidate). */
export function leaderOf(holder: LockHolder | undefined): Leader | undefined {
  const value = holder && proclaimedValue(holder.owner);
  return value === undefined || !holder ? undefined : { value, fencingToken: holder.fencingToken };
}

function validateValue(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_LEADER_VALUE) {
    throw new InvalidLockOptionError('value', `a string of at most ${MAX_LEADER_VALUE} characters`, value);
  }
  return value;
}

/**
 * Leader election on any backend's exclusive lock: a term is a hold of the election's lock whose
 * owner id carries the proclaimed value (candidateOwner), so the term ends exactly as the hold does
 * (release, lease or session lost: its signal aborts) and its fencing token is the hold's.
 * `readLeader` reads the holder and its token in one step on the backend (leaderOf turns a holder
 * into a leader); `watchLeader`, where the backend can watch, lets observe() read only on a change.
 * The generic client builds one over a backend's mutex (or fair) lock when the backend has no
 * `election` factory (see electionOverLock); a backend with its own store layout builds its own.
 */
export class LockElection implements Election {
  constructor(
    readonly name: string,
    private readonly lock: Lock,
    private readonly readLeader: () => Promise<Leader | undefined>,
    /** Given: observe() reads again when the watch fires instead of every `intervalMs`. */
    private readonly watchLeader?: WatchLeader,
  ) {}

  /** Waits until this candidate leads: acquires the election's lock as a candidate's owner id. */
  async campaign(value: string, options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<Term> {
    const proclaimed = validateValue(value);
    const hold = await this.lock.acquire({ ...options, owner: candidateOwner(proclaimed) });
    return new LockTerm(this.name, proclaimed, hold);
  }

  leader(): Promise<Leader | undefined> {
    // The backend's own failure (a driver's error object) reaches the caller as a LockBackendError.
    return this.readLeader().catch((error: unknown) => {
      throw backendError(this.name, error);
    });
  }

  observe(listener: (leader: Leader | undefined) => void, options: { intervalMs?: number } = {}): () => void {
    const intervalMs = options.intervalMs ?? 1_000;
    if (!Number.isFinite(intervalMs) || intervalMs < 10) {
      throw new InvalidLockOptionError('intervalMs', 'a number of milliseconds of at least 10', intervalMs);
    }
    let stopped = false;
    let last: Leader | undefined | null = null; // null: nothing reported yet
    let timer: NodeJS.Timeout | undefined;
    let watch: Watch | undefined;
    const report = (leader: Leader | undefined) => {
      if (last === null || leader?.fencingToken !== last?.fencingToken) listener(leader);
      last = leader;
    };
    const { watchLeader } = this;
    // Where the backend can watch, a change wakes the observer: no read while nothing happens, and
    // no interval's delay. `intervalMs` then only spaces the retries after a failed read.
    const watchChanges = (read: WatchLeader) => {
      read().then(
        ({ leader, changed }) => {
          if (stopped) return changed.cancel();
          report(leader);
          watch = changed;
          const again = () => !stopped && watchChanges(read);
          changed.changed.then(again, again);
        },
        () => {
          if (!stopped) timer = setTimer(() => watchChanges(read), intervalMs); // unreachable: try again
        },
      );
    };
    const check = () => {
      this.readLeader().then(
        (leader) => {
          if (stopped) return;
          report(leader);
          timer = setTimer(check, intervalMs); // an interval past a Node timer's reach: clamped
        },
        () => {
          if (!stopped) timer = setTimer(check, intervalMs); // unreachable: try again
        },
      );
    };
    if (watchLeader) watchChanges(watchLeader);
    else check();
    return () => {
      stopped = true;
      clearTimer(timer);
      watch?.cancel();
    };
  }
}

class LockTerm implements Term {
  constructor(
    readonly election: string,
    readonly value: string,
    private readonly hold: LockHandle,
  ) {}

  get fencingToken(): number {
    return this.hold.fencingToken;
  }

  get signal(): AbortSignal {
    return this.hold.signal;
  }

  async resign(): Promise<void> {
    await this.hold.release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.resign();
  }
}

/**
 * The election the generic client offers on a backend without an `election` factory: a LockElection
 * over `resource`, a lock of its mutex (or fair) family that answers `readHolder()`. `lock` is the
 * core's lock over it (`host.lock(resource, kind)`).
 */
export function electionOverLock(
  name: string,
  lock: Lock,
  resource: { readHolder(): Promise<LockHolder | undefined> },
): Election {
  return new LockElection(name, lock, async () => leaderOf(await resource.readHolder()));
}
