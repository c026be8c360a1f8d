import { usePostgresBackend } from './backends.js';
import { lockContract } from './contract.js';
import { SUBJECTS } from './subjects.mjs';

// The lock contract on one PostgreSQL, for every kind the PostgreSQL backend offers: all but the
// counter semaphore, which it refuses with its reason (see PostgresBackend's capabilities).
lockContract(
  usePostgresBackend(),
  Object.keys(SUBJECTS).filter((subject) => subject !== 'counter-semaphore'),
);
