import { usePostgresBackend } from './backends.js';
import { lockContract } from './contract.js';
import { CONTRACT_KINDS } from '../../src/testing/index.js';
import { longTier, QUICK_CONTRACT_KINDS } from '../helpers/tier.js';

// The lock contract on one PostgreSQL, for every kind the PostgreSQL backend offers: all but the
// counter semaphore, which it refuses with its reason (see PostgresBackend's capabilities).
// npm test: the quick row (a mutex, a fair lock, a semaphore, where offered); every kind in the
// long tier (npm run test:long). Redis on one server runs every kind in both.
lockContract(
  usePostgresBackend(),
  CONTRACT_KINDS.filter((subject) => subject !== 'counter-semaphore').filter(
    (subject) => longTier || QUICK_CONTRACT_KINDS.includes(subject),
  ),
);
