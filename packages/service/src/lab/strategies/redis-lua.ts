import type { Strategy } from '../types.js';
import { labScripts } from './lua/index.js';
import { inspectRedis, labKeys, prepareRedisStock, recordRedisOrder } from './support.js';

/**
 * Seeds 003/004: the check and the decrement in one Lua script, in the three shapes of the seeds
 * (scripts in lua/).
 */

export const redisLuaGetSet: Strategy = {
  name: 'redis-lua',
  title: 'Redis Lua check-and-decrement (GET, compare, SET)',
  claim:
    'Flash-sale tutorials (the Lua seckill script of Redis courses): the read, the check and the write run as one script, so no other command can slip in between.',
  expectation: 'correct',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const key = labKeys(run.runId).stock;
    return async (buyer) => {
      if ((await env.scripts.run(labScripts.takeGetSet, [key], [])) !== 1) return false;
      await recordRedisOrder(env, run, buyer);
      return true;
    };
  },
  inspect: inspectRedis,
};

export const redisLuaHash: Strategy = {
  name: 'redis-lua-hash',
  title: 'Redis Lua hash {total, released}, all or nothing',
  claim:
    'Flash-sale posts: keep total and released in a hash and add to released only if everything asked for fits.',
  expectation: 'correct',
  async prepare(env, run) {
    await env.redis.hset(labKeys(run.runId).hash, 'total', run.stock, 'released', 0);
  },
  async buyer(env, run) {
    const key = labKeys(run.runId).hash;
    return async (buyer) => {
      if ((await env.scripts.run(labScripts.takeHashAllOrNothing, [key], [1])) !== 1) return false;
      await recordRedisOrder(env, run, buyer);
      return true;
    };
  },
  async inspect(env, run) {
    const keys = labKeys(run.runId);
    const [total, released] = await env.redis.hmget(keys.hash, 'total', 'released');
    return {
      orders: await env.redis.lrange(keys.orders, 0, -1),
      finalStock: Number(total) - Number(released),
    };
  },
};

export const redisLuaDecr: Strategy = {
  name: 'redis-lua-decr',
  title: 'Redis DECR, negative means sold out',
  claim:
    'Flash-sale posts: DECR and treat a negative result as sold out — atomic, so no oversell, but the counter itself goes below zero by the number of late buyers.',
  expectation: 'correct',
  note: 'Correct as a sale; but anything that displays or reconciles the counter must clamp it at zero, and a refund that INCRs it back does not restore a sellable unit until the counter climbs above zero again.',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const key = labKeys(run.runId).stock;
    return async (buyer) => {
      if ((await env.redis.decr(key)) < 0) return false;
      await recordRedisOrder(env, run, buyer);
      return true;
    };
  },
  inspect: inspectRedis,
};
