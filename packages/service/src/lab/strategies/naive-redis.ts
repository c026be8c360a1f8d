import type { Strategy } from '../types.js';
import { inspectRedis, prepareRedisStock, redisReadCheckWrite } from './support.js';

/** Seed 000: read the stock, compute stock - 1 in the app, write it back. */
export const naiveRedis: Strategy = {
  name: 'naive-redis',
  title: 'Redis GET then SET',
  claim:
    'The lost-update demo that opens many flash-sale tutorials: stock 5, three concurrent buyers, and the stock ends at 4 instead of 2 — a lost update.',
  expectation: 'oversells',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    return (buyer) => redisReadCheckWrite(env, run, buyer);
  },
  inspect: inspectRedis,
};
