import { LOCK_SCRIPTS } from '../../../src/redis/lock-scripts.js';
import { runSchedule, type SimKind, type SimResult } from '../run.js';
import { redisWorld } from './world.js';

/** A check of the simulation (SimResult.failed) that a mutation must fail. */
export type SimCheck = 'exclusion' | 'tokens' | 'ownership' | 'fifo' | 'liveness' | 'problems';

/**
 * A deliberate bug in one of the shipped Lua scripts, applied as a text edit of the real script when
 * the simulated Redis loads it (EVAL): the adapter and everything above run unchanged. Each names the
 * check that must catch it; a mutation caught only by another check (or a crash) does not count.
 */
export interface ScriptMutation {
  readonly name: string;
  readonly kind: SimKind;
  readonly script: keyof typeof LOCK_SCRIPTS;
  /** Text of the script (its expanded source, fragments included) and what replaces it. */
  readonly find: string;
  readonly replace: string;
  readonly check: SimCheck;
  readonly description: string;
}

export const SCRIPT_MUTATIONS: readonly ScriptMutation[] = [
  {
    name: 'mutex-release-skips-owner-check',
    kind: 'mutex',
    script: 'mutexRelease',
    find: 'if holder ~= ARGV[1] then',
    replace: 'if not holder then',
    check: 'exclusion',
    description: 'mutex-release.lua releases the lock whoever holds it (no owner check)',
  },
  {
    name: 'fair-queue-drops-head',
    kind: 'fair',
    script: 'fairRelease',
    find: `    if deadline and tonumber(deadline) > now then
      return first
    end`,
    replace: `    if deadline and tonumber(deadline) > now then
      dequeue(queue, deadlines, waiters, first)
      return redis.call('zrange', queue, 0, 0)[1] or false
    end`,
    check: 'fifo',
    description: "fair-release.lua's queue (fair-queue.lua) drops its live head and serves the next",
  },
  {
    name: 'semaphore-forgets-a-permit',
    kind: 'semaphore',
    script: 'semaphoreAcquire',
    find: "local count = redis.call('zcard', KEYS[1])",
    replace: "local count = redis.call('zcard', KEYS[1]) - 1",
    check: 'exclusion',
    description: 'semaphore-acquire.lua counts one permit fewer than are taken (permits + 1 holders)',
  },
  {
    name: 'mutex-token-not-increasing',
    kind: 'mutex',
    script: 'mutexAcquire',
    find: "redis.call('incr', KEYS[2])",
    replace: "tonumber(redis.call('get', KEYS[2]) or '7')",
    check: 'tokens',
    description: 'mutex-acquire.lua hands out the same fencing token on every grant',
  },
  {
    name: 'read-beside-writer',
    kind: 'read-write',
    script: 'readAcquire',
    find: "local free = redis.call('exists', KEYS[1], KEYS[3]) == 0",
    replace: "local free = redis.call('exists', KEYS[3]) == 0",
    check: 'exclusion',
    description: 'rw-read-acquire.lua takes a read hold while a writer holds the lock',
  },
];

/**
 * The text edit of `mutation` as the simulated server applies it at load time; `applied()` tells
 * whether it ever matched (a mutation whose text no longer exists in the script must fail loudly, not
 * pass as "not caught").
 */
export function scriptEdit(mutation: ScriptMutation): {
  edit: (source: string) => string;
  applied: () => boolean;
} {
  const target = LOCK_SCRIPTS[mutation.script].source;
  if (!target.includes(mutation.find))
    throw new Error(
      `${mutation.name}: ${mutation.script} no longer contains ${JSON.stringify(mutation.find)}`,
    );
  let applied = false;
  return {
    edit: (source) => {
      if (source !== target) return source;
      applied = true;
      return source.replaceAll(mutation.find, mutation.replace);
    },
    applied: () => applied,
  };
}

/** Runs seeds 1.. of the mutation's kind on the real scripts until one fails (or `maxSeeds` pass). */
export async function huntScriptMutation(
  mutation: ScriptMutation,
  maxSeeds: number,
): Promise<{ caughtAt: number | undefined; result: SimResult | undefined }> {
  const { edit, applied } = scriptEdit(mutation);
  for (let seed = 1; seed <= maxSeeds; seed++) {
    const result = await runSchedule({ kind: mutation.kind, seed, world: redisWorld(edit) });
    if (!applied()) throw new Error(`${mutation.name}: the simulated Redis never loaded ${mutation.script}`);
    if (result.failed.length > 0) return { caughtAt: seed, result };
  }
  return { caughtAt: undefined, result: undefined };
}
