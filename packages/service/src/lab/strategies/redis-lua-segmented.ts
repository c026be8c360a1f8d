import type { Strategy } from '../types.js';
import { labScripts } from './lua/index.js';
import { labKeys, recordRedisOrder } from './support.js';

/**
 * Seed 003 §5.2: split the stock over K keys (100 → 5 × 20), route each buyer to a segment (at random
 * or round-robin) and skip segments known to be empty. It spreads lock-based designs over K locks;
 * with an atomic script per segment on one Redis it only adds round trips when segments run dry.
 */
export const redisLuaSegmented: Strategy = {
  name: 'redis-lua-segmented',
  title: 'Redis Lua over K stock segments',
  claim:
    'Flash-sale posts on hot keys (“segment the stock”): 100 units as 5 segments of 20, buyers routed at random or round-robin, empty segments skipped — more parallelism for lock-based designs.',
  expectation: 'correct',
  note: 'On one Redis it buys nothing: a single script is already atomic and Redis runs scripts one at a time, so throughput stays that of redis-lua within noise, and a buyer who finds segments dry pays up to K round trips. Segments help when they live on different shards (distinct hash tags on a Cluster) or when each is guarded by its own lock instead of a script — and there, routed at random, they tell buyers "sold out" while units are left: see cluster-naive-split against cluster-split-sale.',
  async prepare(env, run) {
    const k = Number(run.options.segments ?? 5);
    const keys = labKeys(run.runId);
    for (let i = 0; i < k; i++) {
      await env.redis.set(keys.segment(i), Math.floor(run.stock / k) + (i < run.stock % k ? 1 : 0));
    }
  },
  async buyer(env, run) {
    const k = Number(run.options.segments ?? 5);
    const roundRobin = run.options.routing === 'round-robin';
    const keys = labKeys(run.runId);
    const empty = new Set<number>(); // per process, as in the seed
    let next = 0;
    return async (buyer) => {
      const first = roundRobin ? next++ % k : Math.floor(Math.random() * k);
      for (let i = 0; i < k; i++) {
        const segment = (first + i) % k;
        if (empty.has(segment)) continue;
        if ((await env.scripts.run(labScripts.takeSegment, [keys.segment(segment)], [])) === 1) {
          await recordRedisOrder(env, run, buyer);
          return true;
        }
        empty.add(segment);
      }
      return false;
    };
  },
  async inspect(env, run) {
    const k = Number(run.options.segments ?? 5);
    const keys = labKeys(run.runId);
    let finalStock = 0;
    for (let i = 0; i < k; i++) finalStock += Number(await env.redis.get(keys.segment(i)));
    return { orders: await env.redis.lrange(keys.orders, 0, -1), finalStock };
  },
};
