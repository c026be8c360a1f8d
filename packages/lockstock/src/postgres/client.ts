import { LockClientBase, validateLeaseMs, type LockClientOptions } from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { Queryable } from '../locks/fencing/postgres-fenced-store.js';
import { PostgresBackend, type PostgresBackendOptions } from './backend.js';
import type { Pool } from './driver.js';
import {
  withTransactionLock,
  type TransactionLock,
  type TransactionLockOptions,
} from './transaction-lock.js';

/**
 * `watchdogTimeoutMs` is accepted for code written for every backend, and changes nothing: holds
 * here have no lease to renew.
 */
export interface PostgresLockClientOptions extends PostgresBackendOptions, LockClientOptions {}

/**
 * Locks of every family PostgreSQL's advisory locks can carry — mutex, reentrant, fair, spin,
 * read-write, semaphore — with the one lock API. A hold lasts as long as its owner's pinned session
 * (no lease, no watchdog): a dropped or terminated connection aborts the signal of exactly the holds
 * it carried, at once, and the server frees their locks. Waiters wait in PostgreSQL's lock queue.
 * Fencing tokens come from one sequence. Behind a transaction-mode pooler, session locks are refused
 * (TransactionPoolerError) unless `scope: 'transaction'` is chosen.
 */
export class PostgresLockClient extends LockClientBase<PostgresBackend> {
  constructor(options: PostgresLockClientOptions) {
    super((host) => new PostgresBackend(validate(options), host), options);
  }

  /** The pool the locks' sessions come from (the caller's, or the one made from a connection string). */
  get pool(): Pool {
    return this.backend.pool;
  }

  /**
   * withTransactionLock with this client's fencing sequence: `fn` runs under the lock of `name` taken
   * in the caller's open transaction on `tx`, and the lock ends with that transaction. The same lock
   * as this client's mutex (and the other exclusive families) of `name`.
   */
  async withTransactionLock<T>(
    tx: Queryable,
    name: string,
    fn: (lock: TransactionLock) => Promise<T>,
    options: Omit<TransactionLockOptions, 'fencingSequence'> = {},
  ): Promise<T> {
    this.core.assertOpen(name);
    const fencingSequence = await this.backend.prepareSequence();
    return withTransactionLock(tx, name, fn, { ...options, fencingSequence });
  }
}

function validate(options: PostgresLockClientOptions): PostgresLockClientOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidLockOptionError('postgres', 'a pg.Pool or a postgres:// connection string', options);
  }
  const { postgres, maxConnections, scope, schema, fencingSequence, sessionCheckMs } = options;
  const isPool = typeof postgres === 'object' && postgres !== null && typeof postgres.connect === 'function';
  if (!isPool && (typeof postgres !== 'string' || postgres.length === 0)) {
    throw new InvalidLockOptionError('postgres', 'a pg.Pool or a postgres:// connection string', postgres);
  }
  if (maxConnections !== undefined && (!Number.isSafeInteger(maxConnections) || maxConnections < 1)) {
    throw new InvalidLockOptionError('maxConnections', 'a positive integer', maxConnections);
  }
  if (sessionCheckMs !== undefined && sessionCheckMs !== 0) validateLeaseMs(sessionCheckMs, 'sessionCheckMs');
  if (scope !== undefined && scope !== 'session' && scope !== 'transaction') {
    throw new InvalidLockOptionError('scope', "'session' or 'transaction'", scope);
  }
  for (const [option, value] of [
    ['schema', schema],
    ['fencingSequence', fencingSequence],
  ] as const) {
    // Quoted by the server (format %I): any name PostgreSQL accepts, at most 63 bytes.
    if (
      value !== undefined &&
      (typeof value !== 'string' || value.length === 0 || Buffer.byteLength(value) > 63)
    ) {
      throw new InvalidLockOptionError(option, 'an identifier of 1 to 63 bytes', value);
    }
  }
  return options;
}
