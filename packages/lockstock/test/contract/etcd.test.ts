import { useEtcdBackend } from './backends.js';
import { lockContract } from './contract.js';
import { SUBJECTS } from './subjects.mjs';

// The lock contract on one etcd, for every kind the etcd backend offers: all but the counter
// semaphore, which it refuses with its reason (see EtcdBackend's capabilities).
lockContract(
  useEtcdBackend(),
  Object.keys(SUBJECTS).filter((subject) => subject !== 'counter-semaphore'),
);
