import { useEtcdBackend } from './backends.js';
import { lockContract } from './contract.js';
import { CONTRACT_KINDS } from '../../src/testing/index.js';
import { longTier, QUICK_CONTRACT_KINDS } from '../helpers/tier.js';

// The lock contract on one etcd, for every kind the etcd backend offers: all but the counter
// semaphore, which it refuses with its reason (see EtcdBackend's capabilities).
// npm test: the quick row (a mutex, a fair lock, a semaphore, where offered); every kind in the
// long tier (npm run test:long). Redis on one server runs every kind in both.
lockContract(
  useEtcdBackend(),
  CONTRACT_KINDS.filter((subject) => subject !== 'counter-semaphore').filter(
    (subject) => longTier || QUICK_CONTRACT_KINDS.includes(subject),
  ),
);
