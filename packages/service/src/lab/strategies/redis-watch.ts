import type { Redis } from 'ioredis';
import type { Strategy } from '../types.js';
import { inspectRedis, labKeys, prepareRedisStock } from './support.js';

/** Seed 004: optimistic Redis — WATCH, read, MULTI/EXEC; EXEC answers nil if someone else wrote. */
export const redisWatch: Strategy = {
  name: 'redis-watch',
  title: 'Redis WATCH / MULTI / EXEC',
  claim:
    'Redis flash-sale posts (1,000 requests for 20 slots): WATCH the stock, decrement in MULTI/EXEC; EXEC returns nil when another client changed it first, so nobody oversells, and losers retry.',
  expectation: 'correct',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const keys = labKeys(run.runId);
    // WATCH state belongs to a connection: each concurrent buyer needs its own.
    const idle: Redis[] = [];
    const retries = Number(run.options.retries ?? -1);
    return async (buyer) => {
      const conn = idle.pop() ?? env.redis.duplicate();
      try {
        for (let attempt = 0; retries < 0 || attempt <= retries; attempt++) {
          await conn.watch(keys.stock);
          const stock = Number(await conn.get(keys.stock));
          if (stock <= 0) {
            await conn.unwatch();
            return false;
          }
          const result = await conn.multi().decr(keys.stock).rpush(keys.orders, buyer).exec();
          if (result !== null) return true; // nil: the stock changed since WATCH; try again
        }
        return false;
      } finally {
        idle.push(conn);
      }
    };
  },
  inspect: inspectRedis,
};
