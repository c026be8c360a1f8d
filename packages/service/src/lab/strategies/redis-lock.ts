import type { Strategy } from '../types.js';
import { lockSale } from './lock-sale.js';
import { inspectRedis, interleave, labKeys, prepareRedisStock, recordRedisOrder } from './support.js';

/** Seeds 000-004: a distributed lock around the read-check-write — here lockstock's mutex. */
export const redisLock = lockSale({
  name: 'redis-lock',
  lockBackend: 'Redis',
  title: 'Redis lock (lockstock mutex)',
  claim:
    'Nearly every Redis distributed-lock post and tutorial: SET NX PX with a unique owner, released by compare-and-delete, waited for without busy polling; the read-check-write inside is safe across processes.',
  expectation: 'correct',
  client: (env) => env.locks,
});

/** Seeds 000/004: the reentrant lock — the decrement helper takes the same lock again. */
export const redisReentrantLock: Strategy = {
  name: 'redis-reentrant-lock',
  title: 'Redis reentrant lock (lockstock, Redisson layout)',
  claim:
    'Redis-lock tutorials (Redisson’s reentrant lock): a hash {holder: count} lets the holder re-enter (a locked method calling another locked method) instead of deadlocking itself.',
  expectation: 'correct',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const keys = labKeys(run.runId);
    const lock = env.locks.reentrant(keys.lock);
    // The inner step locks again: without re-entry this would wait for itself.
    const takeOne = () =>
      lock.run(async () => {
        const stock = Number(await env.redis.get(keys.stock));
        if (stock <= 0) return false;
        await interleave();
        await env.redis.set(keys.stock, stock - 1);
        return true;
      });
    return (buyer) =>
      lock.run(async () => {
        if (!(await takeOne())) return false;
        await recordRedisOrder(env, run, buyer);
        return true;
      });
  },
  inspect: inspectRedis,
};
