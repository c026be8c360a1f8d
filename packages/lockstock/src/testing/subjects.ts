import type { LockFamily } from '../locks/core/spi.js';
import type { Lock, LockClient } from '../locks/types.js';

/**
 * A lock kind the contract suite runs: how to make its lock from any client, how many holders it
 * admits at once, and which parts of the contract apply to it.
 */
export interface ContractSubject {
  /** Holders at once: 1 exclusive, the permits of a semaphore, Infinity for readers. */
  readonly bound: number;
  /** Whether the holding owner's attempts add holds (run() re-entry keeps the token). */
  readonly reentrant: boolean;
  /** Holds end when their holder dies (every kind but the counter semaphore). */
  readonly leased: boolean;
  /** The backend families its lock needs (a family the backend does not offer skips the subject). */
  readonly families: readonly LockFamily[];
  /** This subject's lock named `name`, made from `client`. */
  make(client: LockClient, name: string): Lock;
  /** The lock whose holds block this one and that this one blocks (read locks: the write side). */
  readonly opposite?: (client: LockClient, name: string) => Lock;
  /** Mixed sections: the i-th section's lock, and whether it must be alone ('exclusive') or not. */
  readonly mixed?: (
    client: LockClient,
    name: string,
    i: number,
  ) => { mode: 'exclusive' | 'shared'; lock: Lock };
}

const rw = (client: LockClient, name: string) => client.readWrite(name);

/**
 * The lock kinds of the contract suite, by name: `mutex`, `reentrant`, `fair`, `spin`, `write`,
 * `read`, `read-write` (mixed readers and writers), `semaphore` (3 permits), `counter-semaphore`
 * (3 permits) and `multi-lock` (a reentrant lock and a mutex taken together).
 */
export const CONTRACT_SUBJECTS: Readonly<Record<string, ContractSubject>> = Object.freeze({
  mutex: { bound: 1, reentrant: false, leased: true, families: ['mutex'], make: (c, n) => c.mutex(n) },
  reentrant: {
    bound: 1,
    reentrant: true,
    leased: true,
    families: ['reentrant'],
    make: (c, n) => c.reentrant(n),
  },
  fair: { bound: 1, reentrant: true, leased: true, families: ['fair'], make: (c, n) => c.fair(n) },
  spin: { bound: 1, reentrant: true, leased: true, families: ['spin'], make: (c, n) => c.spin(n) },
  write: {
    bound: 1,
    reentrant: true,
    leased: true,
    families: ['read-write'],
    make: (c, n) => rw(c, n).write,
  },
  // Readers share: what blocks them (and what a dead reader blocks) is the write side.
  read: {
    bound: Infinity,
    reentrant: true,
    leased: true,
    families: ['read-write'],
    make: (c, n) => rw(c, n).read,
    opposite: (c, n) => rw(c, n).write,
  },
  // Mixed sections on one read-write lock: writers alone, readers together.
  'read-write': {
    bound: Infinity,
    reentrant: true,
    leased: true,
    families: ['read-write'],
    make: (c, n) => rw(c, n).write,
    mixed: (c, n, i) =>
      i % 3 === 0 ? { mode: 'exclusive', lock: rw(c, n).write } : { mode: 'shared', lock: rw(c, n).read },
  },
  semaphore: {
    bound: 3,
    reentrant: false,
    leased: true,
    families: ['semaphore'],
    make: (c, n) => c.semaphore(n, { permits: 3 }),
  },
  'counter-semaphore': {
    bound: 3,
    reentrant: false,
    leased: false,
    families: ['counter-semaphore'],
    make: (c, n) => c.counterSemaphore(n, { permits: 3 }),
  },
  'multi-lock': {
    bound: 1,
    reentrant: false,
    leased: true,
    families: ['reentrant', 'mutex'],
    make: (c, n) => c.multiLock([c.reentrant(`${n}:b`), c.mutex(`${n}:a`)]),
  },
} satisfies Record<string, ContractSubject>);
