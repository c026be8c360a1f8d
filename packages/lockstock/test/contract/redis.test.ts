import { useRedisBackend } from './backends.js';
import { lockContract } from './contract.js';

// The lock contract on a single Redis, for every kind.
lockContract(useRedisBackend());
