import { LockClientBase } from '../../src/backend/index.js';
import type { Lock, LockHandle } from '../../src/index.js';
import { Hold } from '../../src/locks/core/hold.js';
import { CoreLatch } from '../../src/locks/core/latch.js';
import { MultiLock } from '../../src/locks/core/multi-lock.js';
import { Waiters } from '../../src/locks/core/waiter.js';
import { Watchdog } from '../../src/locks/core/watchdog.js';
import { BREAKDOWNS, type SimCheck } from './checks.js';
import { withRelease } from './multi-run.js';
import { runSchedule, type SimKind, type SimResult } from './run.js';
import type { StoreMutations } from './store.js';

/**
 * A deliberate bug, to show the simulation fails when it should: in the simulated store (a backend's
 * script gone wrong) or in the core itself (patched for the run, then restored), with the kind it
 * breaks and the check that must report it. Caught means: that check failed, and the run neither
 * crashed nor hung — a mutation that only makes something throw or stall shows nothing about the
 * oracle.
 */
export interface Mutation {
  readonly name: string;
  readonly kind: SimKind;
  readonly store?: StoreMutations;
  /** Patches the core; returns the function that undoes it. */
  readonly core?: () => () => void;
  readonly description: string;
  /** The check (checks.ts) whose failure is the catch. */
  readonly catches: SimCheck;
  /**
   * Caught only after tens of seeds (it needs a pause past a lease at the right moment): hunted by
   * `npm run test:sim -w lockstock` (sim.slow.test.ts), not by the quick row in `npm test`.
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

/** Wraps a (private) method of a core class: `wrap` gets the original, bound to the instance. */
function wrapMethod(
  target: object,
  method: string,
  wrap: (original: (...args: unknown[]) => unknown, self: unknown, args: unknown[]) => unknown,
): () => void {
  const original = (target as Record<string, (...args: unknown[]) => unknown>)[method]!;
  return patch(target, method, function (this: unknown, ...args: unknown[]) {
    return wrap((...a: unknown[]) => original.apply(this, a), this, args);
  });
}

export const MUTATIONS: readonly Mutation[] = [
  {
    name: 'release-without-owner-check',
    catches: 'ownership',
    kind: 'mutex',
    store: { releaseWithoutOwnerCheck: true },
    description: "release() ends the lock's hold whoever asks",
  },
  {
    name: 'fair-out-of-order',
    catches: 'fifo',
    kind: 'fair',
    store: { fairOutOfOrder: true },
    description: 'a free fair lock goes to whoever tries, ahead of the queue',
  },
  {
    name: 'semaphore-off-by-one',
    catches: 'exclusion',
    kind: 'semaphore',
    store: { semaphoreOffByOne: true },
    description: 'a semaphore admits permits + 1 holders',
  },
  {
    name: 'token-not-increasing',
    catches: 'tokens',
    kind: 'mutex',
    store: { tokenNotIncreasing: true },
    description: 'the fencing counter hands the last token out again',
  },
  {
    name: 'extend-revives-expired',
    catches: 'exclusion',
    slow: true,
    kind: 'mutex',
    store: { extendRevivesExpired: true },
    description: "extend() brings back an ended lease's hold when the lock is free",
  },
  {
    name: 'read-beside-writer',
    catches: 'exclusion',
    kind: 'read-write',
    store: { readBesideWriter: true },
    description: 'a read lock is granted while a writer holds',
  },
  {
    name: 'latch-off-by-one',
    catches: 'latch',
    kind: 'latch',
    store: { latchOffByOne: true },
    description: 'a latch reads as released with one count left',
  },
  {
    name: 'reentry-keeps-lease',
    catches: 'exclusion',
    slow: true,
    kind: 'reentrant',
    store: { reentryKeepsLease: true },
    description: 'a re-entry adds a hold without renewing the lease (the local backend did so)',
  },
  {
    name: 'watchdog-never-gives-up',
    catches: 'exclusion',
    slow: true,
    kind: 'reentrant',
    core: () => patch(Watchdog.prototype, 'expire', () => undefined),
    description: 'the core watchdog never marks a hold lost (a failed or refused renewal is ignored)',
  },
  {
    name: 'lease-end-not-armed',
    catches: 'exclusion',
    kind: 'mutex',
    core: () => patch(Hold.prototype, 'armLeaseEnd', () => undefined),
    description: "the core never aborts an explicit lease's hold when the lease ends",
  },
  {
    name: 'silent-release',
    catches: 'liveness',
    kind: 'mutex',
    store: { silentRelease: true },
    description: 'a release wakes no waiter (they sleep until their own retry time)',
  },
  {
    name: 'handoff-without-owner-check',
    catches: 'ownership',
    kind: 'mutex-handoff',
    store: { handOffWithoutOwnerCheck: true },
    description: 'a release with a hand-off offer hands the lock on whoever holds it',
  },
  {
    name: 'handoff-reuses-token',
    catches: 'tokens',
    kind: 'semaphore-handoff',
    store: { handOffReusesToken: true },
    description: "a hand-off gives the waiter the releaser's fencing token",
  },
  {
    name: 'handoff-not-delivered',
    catches: 'leak',
    kind: 'mutex-handoff',
    // Waiters.granted reports the hand-off delivered without giving the waiter the hold: the core
    // keeps (and renews) a hold nobody has, while its waiter times out.
    core: () => patch(Waiters.prototype, 'granted', () => true),
    description: 'the core takes a handed-off lock but never delivers it to its waiter',
  },
  {
    name: 'latch-trusts-wake-up',
    catches: 'latch',
    kind: 'latch',
    // CoreLatch.check passes on the first try after a wake-up instead of reading the count.
    core: () => patch(CoreLatch.prototype, 'check', () => Promise.resolve({ value: true, more: true })),
    description: 'a latch waiter passes when woken without reading the count',
  },
  {
    name: 'multi-lock-unordered',
    catches: 'progress',
    kind: 'multi-lock',
    // The multi-lock keeps its parts in the caller's order: two overlapping sets deadlock.
    core: () =>
      wrapMethod(LockClientBase.prototype, 'multiLock', (original, _self, [locks]) => {
        const multi = original(locks) as MultiLock;
        Object.defineProperty(multi, 'locks', { value: [...(locks as Lock[])] });
        return multi;
      }),
    description: "a multi-lock takes its parts in the caller's order, not by name",
  },
  {
    name: 'multi-lock-keeps-partial',
    catches: 'all-or-nothing',
    kind: 'multi-lock',
    // The give-back of the parts taken before a part was refused does nothing: the acquire fails
    // holding them. (Modelled by parts whose release is a no-op until the acquire returns.)
    core: () => {
      type AcquireAll = (this: MultiLock, options: unknown) => Promise<unknown>;
      const original = (MultiLock.prototype as unknown as { acquireAll: AcquireAll }).acquireAll;
      const keepsPartial: AcquireAll = async function (options) {
        let acquiring = true;
        const locks = this.locks.map((lock) =>
          Object.assign(Object.create(lock) as Lock, {
            tryAcquire: async (o?: Parameters<Lock['tryAcquire']>[0]): Promise<LockHandle | undefined> => {
              const part = await lock.tryAcquire(o);
              return (
                part && withRelease(part, () => (acquiring ? Promise.resolve('released') : part.release()))
              );
            },
          }),
        );
        try {
          return await original.call(Object.create(this, { locks: { value: locks } }) as MultiLock, options);
        } finally {
          acquiring = false;
        }
      };
      return patch(MultiLock.prototype, 'acquireAll', keepsPartial as (...args: unknown[]) => unknown);
    },
    description: 'a multi-lock that cannot have every part keeps the parts it took',
  },
];

/** What hunting a mutation found: the seed and result of the first failing schedule, if any. */
export interface Hunt {
  /** The first seed whose schedule failed (by any check), or undefined if every seed passed. */
  readonly failedAt: number | undefined;
  readonly result: SimResult | undefined;
  /** Caught: the mutation's own check failed there, and the run neither crashed nor hung. */
  readonly caught: boolean;
  /** Why it does not count as caught, in one sentence (undefined when caught). */
  readonly verdict: string | undefined;
}

/**
 * Runs seeds 1.. of the mutation's kind until one fails (or `maxSeeds` pass), and says whether that
 * failure is the catch: the mutation's check among the failed ones, and no breakdown (crash, hang).
 */
export async function hunt(mutation: Mutation, maxSeeds: number): Promise<Hunt> {
  const undo = mutation.core?.();
  try {
    for (let seed = 1; seed <= maxSeeds; seed++) {
      const result = await runSchedule({ kind: mutation.kind, seed, mutations: mutation.store });
      if (result.failed.length === 0) continue;
      const breakdowns = result.failed.filter((check) => BREAKDOWNS.has(check));
      const caught = result.failed.includes(mutation.catches) && breakdowns.length === 0;
      const verdict = caught
        ? undefined
        : breakdowns.length > 0
          ? `${mutation.name} broke the run down (${breakdowns.join(', ')}) at seed ${seed} instead of failing '${mutation.catches}'`
          : `${mutation.name} was reported by ${result.failed.join(', ')} at seed ${seed}, not by '${mutation.catches}'`;
      return { failedAt: seed, result, caught, verdict };
    }
    return {
      failedAt: undefined,
      result: undefined,
      caught: false,
      verdict: `${mutation.name} passed ${maxSeeds} seeds: '${mutation.catches}' never failed`,
    };
  } finally {
    undo?.();
  }
}
