import { useRedisClusterBackend } from './backends.js';
import { lockContract } from './contract.js';

// The lock contract on a 3-master Redis Cluster, for every kind: keys share their lock's hash tag,
// wake-ups use sharded pub/sub, a multi-lock's parts live on different slots.
lockContract(useRedisClusterBackend());
