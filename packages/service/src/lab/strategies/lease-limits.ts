import { LockLostError, RedisFencedStore } from 'lockstock';
import type { Strategy } from '../types.js';
import { inspectRedis, labKeys, prepareRedisStock, recordRedisOrder } from './support.js';

/**
 * The limit of every lease lock, lockstock's included, and its remedy: a holder that stalls past its
 * lease (a GC pause, SIGSTOP, a slow disk) still writes afterwards, on a read the next holder has also
 * made — unless the resource refuses it by fencing token.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const redisLockPaused: Strategy = {
  name: 'redis-lock-paused',
  title: 'lockstock mutex, holder paused past its lease',
  claim:
    'Distributed-lock posts and Martin Kleppmann’s “How to do distributed locking”: a lease lock cannot stop a holder that pauses past its lease from acting afterwards; the lock stays correct, the critical section does not.',
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

/** The stock as a fenced value: stale holders can neither claim it nor write it. */
const fencedStockKey = (runId: string) => `lab-${runId}-stock`;

export const redisLockFenced: Strategy = {
  name: 'redis-lock-fenced',
  title: 'lockstock mutex + fenced stock, holder paused past its lease',
  claim:
    'The remedy for redis-lock-paused (Kleppmann, "How to do distributed locking"): the resource checks the fencing token, so a holder whose lease ran out is refused however long it paused.',
  expectation: 'correct',
  note: "Fencing only the write is not enough for a read-modify-write: a stale holder that resumes between the next holder's read and write would be accepted (no newer token seen yet) and then overwritten. The stock is therefore claimed with the token before it is read (FencedStore.claim), then written with it.",
  async prepare(env, run) {
    const store = new RedisFencedStore(env.redis);
    await store.write(fencedStockKey(run.runId), String(run.stock), { fencingToken: 0, owner: 'lab' });
  },
  async buyer(env, run) {
    const lock = env.locks.mutex(labKeys(run.runId).lock);
    const store = new RedisFencedStore(env.redis);
    const key = fencedStockKey(run.runId);
    const leaseMs = Number(run.options.leaseMs ?? 30);
    const pauseEvery = Number(run.options.pauseEvery ?? 5);
    let n = 0;
    return async (buyer) => {
      let sold = false;
      try {
        await lock.run(
          async (_signal, handle) => {
            const claimed = await store.claim(key, handle);
            if (!claimed.granted) return; // a newer holder is already at work
            const stock = Number(claimed.value);
            if (stock <= 0) return;
            if (++n % pauseEvery === 0) await sleep(leaseMs * 1.5); // the same stall as redis-lock-paused
            if (!(await store.write(key, String(stock - 1), handle))) return; // refused: stale
            await recordRedisOrder(env, run, buyer);
            sold = true;
          },
          { leaseMs },
        );
      } catch (error) {
        // run() reports the lease that ran out; with the stock fenced that is harmless: a stale write
        // was refused, and an accepted one was still the newest. The buyer simply did or did not buy.
        if (!(error instanceof LockLostError)) throw error;
      }
      return sold;
    };
  },
  async inspect(env, run) {
    const { orders } = await inspectRedis(env, run);
    const stock = await new RedisFencedStore(env.redis).read(fencedStockKey(run.runId));
    return { orders, finalStock: Number(stock) };
  },
};
