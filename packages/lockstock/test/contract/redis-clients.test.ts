import { Cluster as ValkeyCluster } from 'iovalkey';
import { describe, expect, it } from 'vitest';
import { InvalidLockOptionError, RedisLockClient } from '../../src/index.js';
import { longTier } from '../helpers/tier.js';
import { useRedisBackend, useRedisClusterBackend, useRedisSentinelBackend } from './backends.js';
import { lockContract } from './contract.js';

// The lock contract through the other Redis clients lockstock accepts: node-redis (v5) and iovalkey,
// on one Redis and on a 3-master Cluster (the ioredis rows are redis.test.ts and cluster.test.ts).
// `npm test` runs a quick row per client — the mutex (scripts, wake-ups over sharded pub/sub, fencing,
// SIGKILLed holders); the long tier (`npm run test:long`) runs every kind, as the ioredis suites do.
const subjects = longTier ? undefined : ['mutex'];

describe('node-redis', () => lockContract(useRedisBackend('node-redis'), subjects));
describe('node-redis Cluster', () => lockContract(useRedisClusterBackend('node-redis'), subjects));
describe('iovalkey', () => lockContract(useRedisBackend('iovalkey'), subjects));
// Sentinel through node-redis's createSentinel: the long tier only (a group is three more servers).
describe.runIf(longTier)('node-redis Sentinel', () => lockContract(useRedisSentinelBackend('node-redis')));

// iovalkey's Cluster (0.4) cannot route SSUBSCRIBE (it loops on MOVED: the contract's mutex rows
// failed with "Too many Cluster redirections"), so the lock client refuses it with a sentence.
describe('iovalkey Cluster', () => {
  it('is refused with InvalidLockOptionError that says why and what works', () => {
    const cluster = new ValkeyCluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    try {
      expect(() => new RedisLockClient({ redis: cluster as never })).toThrow(InvalidLockOptionError);
      expect(() => new RedisLockClient({ redis: cluster as never })).toThrow(/sharded pub\/sub/);
    } finally {
      cluster.disconnect();
    }
  });
});
