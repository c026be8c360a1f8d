import { Hold } from '../../src/locks/core/hold.js';
import { Watchdog } from '../../src/locks/core/watchdog.js';
import { runSchedule, type SimKind, type SimResult } from './run.js';
import type { StoreMutations } from './store.js';

/**
 * A deliberate bug, to show the simulation fails when it should: in the simulated store (a backend's
 * script gone wrong) or in the core itself (patched for the run, then restored), with the kind it
 * breaks and the check expected to notice.
 */
export interface Mutation {
  readonly name: string;
  readonly kind: SimKind;
  readonly store?: StoreMutations;
  /** Patches the core; returns the function that undoes it. */
  readonly core?: () => () => void;
  readonly description: string;
  /**
   * Caught only after tens of seeds (it needs a pause past a lease at the right moment): hunted by
   * `npm run sim -w lockstock -- --mutations`, not by the quick row in `npm test`.
   */
  readonly slow?: true;
}

/** Replaces a (private) method of a core class for the run. */
function patch(target: object, method: string, replacement: (...args: unknown[]) => unknown): () => void {
  const record = target as Record<string, unknown>;
  const original = record[method];
  record[method] = replacement;
  return () => (record[method] = original);
}

export const MUTATIONS: readonly Mutation[] = [
  {
    name: 'release-without-owner-check',
    kind: 'mutex',
    store: { releaseWithoutOwnerCheck: true },
    description: "release() ends the lock's hold whoever asks",
  },
  {
    name: 'fair-out-of-order',
    kind: 'fair',
    store: { fairOutOfOrder: true },
    description: 'a free fair lock goes to whoever tries, ahead of the queue',
  },
  {
    name: 'semaphore-off-by-one',
    kind: 'semaphore',
    store: { semaphoreOffByOne: true },
    description: 'a semaphore admits permits + 1 holders',
  },
  {
    name: 'token-not-increasing',
    kind: 'mutex',
    store: { tokenNotIncreasing: true },
    description: 'the fencing counter hands the last token out again',
  },
  {
    name: 'extend-revives-expired',
    slow: true,
    kind: 'mutex',
    store: { extendRevivesExpired: true },
    description: "extend() brings back an ended lease's hold when the lock is free",
  },
  {
    name: 'read-beside-writer',
    kind: 'read-write',
    store: { readBesideWriter: true },
    description: 'a read lock is granted while a writer holds',
  },
  {
    name: 'latch-off-by-one',
    kind: 'latch',
    store: { latchOffByOne: true },
    description: 'a latch reads as released with one count left',
  },
  {
    name: 'reentry-keeps-lease',
    slow: true,
    kind: 'reentrant',
    store: { reentryKeepsLease: true },
    description: 'a re-entry adds a hold without renewing the lease (the local backend did so)',
  },
  {
    name: 'watchdog-never-gives-up',
    slow: true,
    kind: 'reentrant',
    core: () => patch(Watchdog.prototype, 'expire', () => undefined),
    description: 'the core watchdog never marks a hold lost (a failed or refused renewal is ignored)',
  },
  {
    name: 'lease-end-not-armed',
    kind: 'mutex',
    core: () => patch(Hold.prototype, 'armLeaseEnd', () => undefined),
    description: "the core never aborts an explicit lease's hold when the lease ends",
  },
];

/** Runs seeds 1.. of the mutation's kind until one fails (or `maxSeeds` pass): the first failure. */
export async function hunt(
  mutation: Mutation,
  maxSeeds: number,
): Promise<{ caughtAt: number | undefined; result: SimResult | undefined }> {
  const undo = mutation.core?.();
  try {
    for (let seed = 1; seed <= maxSeeds; seed++) {
      const result = await runSchedule({ kind: mutation.kind, seed, mutations: mutation.store });
      if (result.failed.length > 0) return { caughtAt: seed, result };
    }
    return { caughtAt: undefined, result: undefined };
  } finally {
    undo?.();
  }
}
