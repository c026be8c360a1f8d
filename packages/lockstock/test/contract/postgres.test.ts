import { usePostgresBackend } from './backends.js';
import { lockContract } from './contract.js';
import { CONTRACT_KINDS } from '../../src/testing/index.js';

// The lock contract on one PostgreSQL, for every kind the PostgreSQL backend offers: all but the
// counter semaphore, which it refuses with its reason (see PostgresBackend's capabilities).
lockContract(
  usePostgresBackend(),
  CONTRACT_KINDS.filter((subject) => subject !== 'counter-semaphore'),
);
