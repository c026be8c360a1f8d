/**
 * `lockstock/postgres` — the lock API on PostgreSQL's advisory locks (driver: `pg`, an optional peer
 * dependency loaded on first use). PostgresLockClient offers mutex, reentrant, fair, spin, read-write
 * and semaphore locks held by pinned sessions; withTransactionLock takes a lock inside a transaction
 * the caller already holds. Lock names map to advisory-lock keys by a stated hash (lockKey).
 *
 * @module lockstock/postgres
 */
export { PostgresLockClient, type PostgresLockClientOptions } from './client.js';
export { PostgresBackend, type PostgresBackendOptions } from './backend.js';
export {
  withTransactionLock,
  type TransactionLock,
  type TransactionLockOptions,
} from './transaction-lock.js';
export { lockKey, permitKeys } from './keys.js';
export { PostgresSessionError, TransactionPoolerError } from './errors.js';
export type { PoolerVerdict } from './pooler.js';
