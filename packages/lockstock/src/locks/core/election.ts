import { setTimer } from '../../support/timer.js';
import { backendError, InvalidLockOptionError } from '../errors.js';
import { newOwnerId } from '../owner.js';
import type { Election, Leader, Lock, LockHandle, Term } from '../types.js';
import type { Watch } from './backend.js';

/** The leader, read with a watch that settles when it may have changed (a backend that can watch). */
export type WatchLeader = () => Promise<{ readonly leader: Leader | undefined; readonly changed: Watch }>;

/** Longest proclaimed value: it travels inside the holder's owner id (at most 256 characters). */
export const MAX_LEADER_VALUE = 200;

/** The candidate's owner id carries its proclaimed value: `<unique id>|<value>`. */
export const candidateOwner = (value: string): string => `${newOwnerId()}|${value}`;

/** The value a candidate proclaimed, from its owner id (undefined: not a candidate's). */
export function proclaimedValue(owner: string): string | undefined {
  const at = owner.indexOf('|');
  return at < 0 ? undefined : owner.slice(at + 1);
}

function validateValue(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_LEADER_VALUE) {
    throw new InvalidLockOptionError('value', `a string of at most ${MAX_LEADER_VALUE} characters`, value);
  }
  return value;
}

/**
 * Leader election on any backend's exclusive lock: a term is a hold of the election's lock whose
 * owner carries the proclaimed value, so the term ends exactly as the hold does (release, lease or
 * session lost: its signal aborts) and its fencing token is the hold's. `readLeader` reads the holder
 * and its token in one step on the backend.
 */
export class LockElection implements Election {
  constructor(
    readonly name: string,
    private readonly lock: Lock,
    private readonly readLeader: () => Promise<Leader | undefined>,
    /** Given: observe() reads again when the watch fires instead of every `intervalMs`. */
    private readonly watchLeader?: WatchLeader,
  ) {}

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
      clearTimeout(timer);
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
