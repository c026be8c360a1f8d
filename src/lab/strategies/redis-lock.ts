import type { Strategy } from '../types.js';
import { inspectRedis, interleave, labKeys, prepareRedisStock, recordRedisOrder } from './support.js';

/** Seeds 000-004: a distributed lock around the read-check-write — here lockstock's mutex. */
export const redisLock: Strategy = {
  name: 'redis-lock',
  title: 'Redis lock (lockstock mutex)',
  claim:
    'Seeds 000-004: SET NX PX with a unique owner, released by compare-and-delete, waited for without busy polling; the read-check-write inside is safe across processes.',
  expectation: 'correct',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const keys = labKeys(run.runId);
    const lock = env.locks.mutex(keys.lock);
    return (buyer) =>
      lock.run(async () => {
        const stock = Number(await env.redis.get(keys.stock));
        if (stock <= 0) return false;
        await interleave();
        await env.redis.set(keys.stock, stock - 1);
        await recordRedisOrder(env, run, buyer);
        return true;
      });
  },
  inspect: inspectRedis,
};

/** Seeds 000/004: the reentrant lock — the decrement helper takes the same lock again. */
export const redisReentrantLock: Strategy = {
  name: 'redis-reentrant-lock',
  title: 'Redis reentrant lock (lockstock, Redisson layout)',
  claim:
    'Seeds 000, 004: a hash {holder: count} lets the holder re-enter (a locked method calling another locked method) instead of deadlocking itself.',
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The limit of every lease lock, lockstock's included: a holder that stalls past its lease (a GC
 * pause, SIGSTOP, a slow disk) still writes afterwards, on a read the next holder has also made.
 */
export const redisLockPaused: Strategy = {
  name: 'redis-lock-paused',
  title: 'lockstock mutex, holder paused past its lease',
  claim:
    'Seeds 002, 003 (and Kleppmann on Redlock): a lease lock cannot stop a holder that pauses past its lease from acting afterwards; the lock stays correct, the critical section does not.',
  expectation: 'oversells',
  note: 'lockstock aborts the run() signal when a lease ends, and this holder checks it right before the write, but the pause falls between check and write. The remedy belongs to the resource: an atomic conditional write (redis-lua, sql-atomic), or a store that refuses stale fencing tokens (RedisFencedStore, PostgresFencedStore) for writes that do not depend on an earlier read. The watchdog (no explicit lease) makes such pauses far less likely but cannot rule them out.',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const keys = labKeys(run.runId);
    const lock = env.locks.mutex(keys.lock);
    const leaseMs = Number(run.options.leaseMs ?? 30);
    const pauseEvery = Number(run.options.pauseEvery ?? 5);
    let n = 0;
    return (buyer) =>
      lock.run(
        async (signal) => {
          const stock = Number(await env.redis.get(keys.stock));
          if (stock <= 0) return false;
          signal.throwIfAborted(); // the holder does check its lease...
          if (++n % pauseEvery === 0) await sleep(leaseMs * 1.5); // ...then stalls past it
          await env.redis.set(keys.stock, stock - 1);
          await recordRedisOrder(env, run, buyer);
          return true;
        },
        { leaseMs },
      );
  },
  inspect: inspectRedis,
};
