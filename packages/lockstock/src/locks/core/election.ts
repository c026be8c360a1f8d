import { setTimer } from '../../support/timer.js';
import { InvalidLockOptionError } from '../errors.js';
import { newOwnerId } from '../owner.js';
import type { Election, Leader, Lock, LockHandle, Term } from '../types.js';

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
  ) {}

  async campaign(value: string, options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<Term> {
    const proclaimed = validateValue(value);
    const hold = await this.lock.acquire({ ...options, owner: candidateOwner(proclaimed) });
    return new LockTerm(this.name, proclaimed, hold);
  }

  leader(): Promise<Leader | undefined> {
    return this.readLeader();
  }

  observe(listener: (leader: Leader | undefined) => void, options: { intervalMs?: number } = {}): () => void {
    const intervalMs = options.intervalMs ?? 1_000;
    if (!Number.isFinite(intervalMs) || intervalMs < 10) {
      throw new InvalidLockOptionError('intervalMs', 'a number of milliseconds of at least 10', intervalMs);
    }
    let stopped = false;
    let last: Leader | undefined | null = null; // null: nothing reported yet
    let timer: NodeJS.Timeout | undefined;
    const check = () => {
      this.readLeader().then(
        (leader) => {
          if (stopped) return;
          if (last === null || leader?.fencingToken !== last?.fencingToken) listener(leader);
          last = leader;
          timer = setTimer(check, intervalMs); // an interval past a Node timer's reach: clamped
        },
        () => {
          if (!stopped) timer = setTimer(check, intervalMs); // unreachable: try again
        },
      );
    };
    check();
    return () => {
      stopped = true;
      clearTimeout(timer);
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
