import { useMySqlBackend } from './backends.js';
import { lockContract } from './contract.js';
import { SUBJECTS } from './subjects.mjs';

// The lock contract on one MariaDB, for every kind the MySQL backend offers: GET_LOCK has no shared
// mode (no read-write lock) and its locks end with their sessions (no counter semaphore); both are
// refused with their reasons (see MySqlBackend's capabilities).
const REFUSED = new Set(['read', 'write', 'read-write', 'counter-semaphore']);
lockContract(
  useMySqlBackend(),
  Object.keys(SUBJECTS).filter((subject) => !REFUSED.has(subject)),
);
