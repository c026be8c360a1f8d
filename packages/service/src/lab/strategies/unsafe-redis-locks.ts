import { randomBytes } from 'node:crypto';

import type { LabRun, Strategy } from '../types.js';
import { labScripts } from './lua/index.js';
import { inspectRedis, labKeys, prepareRedisStock, redisReadCheckWrite } from './support.js';

/**
 * The hand-rolled Redis locks the seeds warn about, each run with the fault that breaks it:
 * a holder that crashes (no expiry → everyone after it stalls) or one that pauses past its lease
 * (release without an owner check → it deletes the next holder's lock).
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `take` every few ms (as the seeds do) until it succeeds or `waitMs` has passed. */
async function pollFor(take: () => Promise<boolean>, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!(await take())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for the lock after ${waitMs} ms`);
    await sleep(2 + Math.random() * 3);
  }
}

/**
 * One buyer in `every` (per process) crashes while holding the lock: the attempt throws without
 * releasing. The default crashes early enough (at most P × 9 sales before the first crash, fewer
 * than the default stock of 50 with 4 processes) that the stall leaves stock unsold.
 */
function crashes(run: LabRun): () => boolean {
  const every = Number(run.options.crashEvery ?? 10);
  let n = 0;
  return () => ++n % every === 0;
}

export const redisLockNoExpiry: Strategy = {
  name: 'redis-lock-no-expiry',
  title: 'Redis SETNX without expiry (holder crashes)',
  claim:
    'Redis-lock tutorials warn: a lock without an expiry is held forever by a holder that crashes; everyone after it waits in vain.',
  expectation: 'stalls',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const key = labKeys(run.runId).raw;
    const crash = crashes(run);
    const waitMs = Number(run.options.waitMs ?? 200);
    return async (buyer) => {
      const owner = randomBytes(8).toString('hex');
      await pollFor(async () => (await env.redis.set(key, owner, 'NX')) === 'OK', waitMs);
      if (crash()) throw new Error('holder crashed inside the critical section');
      try {
        return await redisReadCheckWrite(env, run, buyer);
      } finally {
        await env.scripts.run(labScripts.releaseIfOwner, [key], [owner]);
      }
    };
  },
  inspect: inspectRedis,
};

export const redisLockSetnxExpire: Strategy = {
  name: 'redis-lock-setnx-expire',
  title: 'Redis SETNX then EXPIRE (crash in between)',
  claim:
    'Redis-lock tutorials warn: SETNX and EXPIRE as two commands are not atomic; a crash between them leaves a lock that never expires.',
  expectation: 'stalls',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const key = labKeys(run.runId).raw;
    const crash = crashes(run);
    const waitMs = Number(run.options.waitMs ?? 200);
    return async (buyer) => {
      const owner = randomBytes(8).toString('hex');
      await pollFor(async () => (await env.redis.setnx(key, owner)) === 1, waitMs);
      if (crash()) throw new Error('holder crashed between SETNX and EXPIRE');
      await env.redis.pexpire(key, 5_000);
      try {
        return await redisReadCheckWrite(env, run, buyer);
      } finally {
        await env.scripts.run(labScripts.releaseIfOwner, [key], [owner]);
      }
    };
  },
  inspect: inspectRedis,
};

export const redisLockUnownedRelease: Strategy = {
  name: 'redis-lock-unowned-release',
  title: 'Redis lock released with a plain DEL (holder pauses)',
  claim:
    "Redis-lock tutorials warn: releasing with DEL instead of compare-and-delete lets a holder whose lease ran out (a GC pause) delete the next holder's lock; a third buyer then enters alongside the second.",
  expectation: 'oversells',
  prepare: prepareRedisStock,
  async buyer(env, run) {
    const key = labKeys(run.runId).raw;
    const leaseMs = Number(run.options.leaseMs ?? 30);
    const workMs = Number(run.options.workMs ?? 10);
    const pauseEvery = Number(run.options.pauseEvery ?? 5);
    let n = 0;
    return async (buyer) => {
      await pollFor(async () => (await env.redis.set(key, 'held', 'PX', leaseMs, 'NX')) === 'OK', 10_000);
      try {
        return await redisReadCheckWrite(env, run, buyer, workMs);
      } finally {
        // Every few buyers the holder stalls past its lease after its work (GC, slow logging), so
        // the lock has meanwhile passed to the next buyer, who is mid-work when this DEL frees it.
        if (++n % pauseEvery === 0) await sleep(leaseMs * 1.5);
        await env.redis.del(key); // the mistake: whoever holds it now loses it
      }
    };
  },
  inspect: inspectRedis,
};
