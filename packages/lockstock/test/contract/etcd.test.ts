import { useEtcdBackend } from './backends.js';
import { lockContract } from './contract.js';
import { CONTRACT_KINDS } from '../../src/testing/index.js';

// The lock contract on one etcd, for every kind the etcd backend offers: all but the counter
// semaphore, which it refuses with its reason (see EtcdBackend's capabilities).
lockContract(
  useEtcdBackend(),
  CONTRACT_KINDS.filter((subject) => subject !== 'counter-semaphore'),
);
