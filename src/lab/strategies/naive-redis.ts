import type { Strategy } from '../types.js';
import { inspectRedis, interleave, labKeys, prepareRedisStock, recordRedisOrder } from './support.js';

/** Seed 000: read the stock, compute stock - 1 in the app, write it back. */
export const naiveRedis: Strategy = {
  name: 'naive-redis',
  title: 'Redis GET then SET',
  claim: 'Seed 000: stock 5, three concurrent buyers, and the stock ends at 4 instead of 2 — a lost update.',
  expectation: 'oversells',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const key = labKeys(run.runId).stock;
    return async (buyer) => {
      const stock = Number(await env.redis.get(key));
      if (stock <= 0) return false;
      await interleave();
      await env.redis.set(key, stock - 1);
      await recordRedisOrder(env, run, buyer);
      return true;
    };
  },
  inspect: inspectRedis,
};
