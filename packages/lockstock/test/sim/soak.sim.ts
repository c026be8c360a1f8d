import { expect, it } from 'vitest';
import { hunt, MUTATIONS } from './mutations.js';
import { describeFailure, runSchedule, SIM_KINDS, type SimKind } from './run.js';
import { REDIS_SIM_KINDS, redisWorld } from './redis/world.js';

/**
 * The long run of the simulation, behind `npm run sim -w lockstock` (test/sim/cli.mjs sets these):
 * SIM_SEEDS seeds per kind from SIM_FIRST (or the one SIM_SEED), SIM_KIND (default: every kind),
 * SIM_REORDER=1 to let a client's requests overtake each other, SIM_MUTATIONS=1 to hunt every
 * mutation instead, SIM_REDIS=1 to run the real Redis adapter and its Lua scripts (test/sim/redis/)
 * over the command model instead of the simulated store. Prints seeds, time and every failure with its replay line.
 */
const env = process.env;
const redis = env.SIM_REDIS === '1';
const kinds = (env.SIM_KIND ? env.SIM_KIND.split(',') : redis ? REDIS_SIM_KINDS : SIM_KINDS) as SimKind[];
const first = Number(env.SIM_SEED ?? env.SIM_FIRST ?? 1);
const seeds = env.SIM_SEED ? 1 : Number(env.SIM_SEEDS ?? 200);
const reorder = env.SIM_REORDER === '1';

if (env.SIM_MUTATIONS === '1') {
  it('mutations', async () => {
    const lines: string[] = [];
    for (const mutation of MUTATIONS) {
      const started = Date.now();
      const { caught, failedAt, verdict } = await hunt(mutation, seeds);
      lines.push(
        `${mutation.name} (${mutation.kind}${mutation.core ? ', core' : ''}): ${
          caught ? `caught by '${mutation.catches}' at seed ${failedAt}` : `NOT caught: ${verdict}`
        } (${Date.now() - started} ms)`,
      );
    }
    console.log(lines.join('\n'));
  });
} else {
  for (const kind of kinds) {
    it(kind, async () => {
      const started = Date.now();
      const failures: string[] = [];
      let tasks = 0;
      let virtualMs = 0;
      for (let seed = first; seed < first + seeds; seed++) {
        const result = await runSchedule({ kind, seed, reorder, ...(redis ? { world: redisWorld() } : {}) });
        tasks += result.tasks;
        virtualMs += result.virtualMs;
        if (result.failed.length > 0) {
          failures.push(describeFailure(result));
          if (seeds === 1 && env.SIM_HISTORY === '1') console.log(JSON.stringify(result.history, null, 0));
        }
      }
      console.log(
        `${kind}${redis ? ' (Redis scripts)' : ''}: ${seeds} seeds from ${first}${reorder ? ' (reordering)' : ''}, ${failures.length} failed, ` +
          `${Date.now() - started} ms (${tasks} tasks, ${Math.round(virtualMs / 1000)} s of virtual time)` +
          failures.map((f) => `\n${f}`).join(''),
      );
      expect(failures).toEqual([]);
    });
  }
}
