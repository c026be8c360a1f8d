import { useMySqlBackend } from './backends.js';
import { lockContract } from './contract.js';
import { CONTRACT_KINDS } from '../../src/testing/index.js';
import { longTier, QUICK_CONTRACT_KINDS } from '../helpers/tier.js';

// The lock contract on one MariaDB, for every kind the MySQL backend offers: GET_LOCK has no shared
// mode (no read-write lock) and its locks end with their sessions (no counter semaphore); both are
// refused with their reasons (see MySqlBackend's capabilities).
const REFUSED = new Set(['read', 'write', 'read-write', 'counter-semaphore']);
// npm test: the quick row (a mutex, a fair lock, a semaphore, where offered); every kind in the
// long tier (npm run test:long). Redis on one server runs every kind in both.
lockContract(
  useMySqlBackend(),
  CONTRACT_KINDS.filter((subject) => !REFUSED.has(subject)).filter(
    (subject) => longTier || QUICK_CONTRACT_KINDS.includes(subject),
  ),
);
