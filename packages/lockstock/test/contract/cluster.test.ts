import { useRedisClusterBackend } from './backends.js';
import { lockContract } from './contract.js';
import { longTier, QUICK_CONTRACT_KINDS } from '../helpers/tier.js';

// The lock contract on a 3-master Redis Cluster, for every kind: keys share their lock's hash tag,
// wake-ups use sharded pub/sub, a multi-lock's parts live on different slots.
// npm test: the quick row (a mutex, a fair lock, a semaphore: scripts, queues, permits across
// slots); every kind in the long tier (npm run test:long). Redis on one server runs every kind in both.
lockContract(useRedisClusterBackend(), longTier ? undefined : QUICK_CONTRACT_KINDS);
