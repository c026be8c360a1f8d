import { describe, expect, it } from 'vitest';
import { formatHistory } from '../../../src/checker/index.js';
import { describeFailure, runSchedule } from '../run.js';
import { huntScriptMutation, SCRIPT_MUTATIONS } from './script-mutations.js';
import { REDIS_SIM_KINDS, redisWorld } from './world.js';

/**
 * The quick row of the real Redis adapter under simulation (test/sim/redis/): RedisLockClient and
 * the shipped Lua scripts, run in fengari over the command model, with the simulation's faults,
 * seeds and checker. More seeds: `npm run sim -w lockstock -- --redis --seeds 500`.
 */
const SEEDS_PER_KIND = 2;
/** Each script mutation is caught at seed 1 or 2 today. */
const MUTATION_SEED_BOUND = 8;

describe('the Redis adapter and its Lua scripts under simulation', () => {
  for (const kind of REDIS_SIM_KINDS) {
    it(`${kind}: ${SEEDS_PER_KIND} schedules pass the checker`, async () => {
      const failures: string[] = [];
      for (let seed = 1; seed <= SEEDS_PER_KIND; seed++) {
        const result = await runSchedule({ kind, seed, world: redisWorld() });
        if (result.failed.length > 0) failures.push(describeFailure(result));
      }
      expect(failures).toEqual([]);
    });
  }

  it('a seed replays exactly over the scripts too', async () => {
    const first = await runSchedule({ kind: 'fair', seed: 3, world: redisWorld() });
    const again = await runSchedule({ kind: 'fair', seed: 3, world: redisWorld() });
    expect(formatHistory(again.history)).toBe(formatHistory(first.history));
    expect(again.tasks).toBe(first.tasks);
  });
});

describe('a mutated script is caught by the check it names', () => {
  for (const mutation of SCRIPT_MUTATIONS) {
    it(`${mutation.name} (${mutation.description}): ${mutation.check}`, async () => {
      const { caughtAt, result } = await huntScriptMutation(mutation, MUTATION_SEED_BOUND);
      expect(caughtAt, `not caught within ${MUTATION_SEED_BOUND} seeds`).toBeDefined();
      expect(result!.failed, describeFailure(result!)).toContain(mutation.check);
    });
  }
});
