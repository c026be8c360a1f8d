import { LockClientBase, validateLeaseMs, type LockClientOptions } from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import { MySqlBackend, type MySqlBackendOptions } from './backend.js';
import type { Pool } from './driver.js';
import { validTableName } from './fencing.js';

/**
 * `watchdogTimeoutMs` is accepted for code written for every backend, and changes nothing: holds
 * here have no lease to renew.
 */
export interface MySqlLockClientOptions extends MySqlBackendOptions, LockClientOptions {}

/**
 * Locks of every family MySQL's and MariaDB's user locks (GET_LOCK) can carry — mutex, reentrant,
 * fair, spin, semaphore — and elections, with the one lock API. A hold lasts as long as its owner's
 * pinned connection (no lease, no watchdog): a killed or dropped connection aborts the signal of
 * exactly the hold it carried, at once, and the server frees the lock. Waiters wait in the server's
 * queue. Fencing tokens come from a sequence on MariaDB ≥ 10.3, else from a table. Read-write locks, counter semaphores and latches are
 * refused (UnsupportedLockKindError, with the reason).
 */
export class MySqlLockClient extends LockClientBase<MySqlBackend> {
  constructor(options: MySqlLockClientOptions) {
    super((host) => new MySqlBackend(validate(options), host), options);
  }

  /** The pool the locks' sessions come from (the client made it and closes it). */
  get pool(): Pool {
    return this.backend.pool;
  }
}

function validate(options: MySqlLockClientOptions): MySqlLockClientOptions {
  const expected = 'a mysql:// URI or mysql2 pool options';
  if (typeof options !== 'object' || options === null)
    throw new InvalidLockOptionError('mysql', expected, options);
  const { mysql, maxConnections, fencingTable, fencingSequence, sessionCheckMs } = options;
  const isOptions = typeof mysql === 'object' && mysql !== null;
  if (!isOptions && (typeof mysql !== 'string' || mysql.length === 0)) {
    throw new InvalidLockOptionError('mysql', expected, mysql);
  }
  if (isOptions && typeof (mysql as { getConnection?: unknown }).getConnection === 'function') {
    // A pool of the caller's: its connections' sessions could carry locks we cannot see end.
    throw new InvalidLockOptionError('mysql', `${expected} (not a pool: the client makes its own)`, mysql);
  }
  if (maxConnections !== undefined && (!Number.isSafeInteger(maxConnections) || maxConnections < 1)) {
    throw new InvalidLockOptionError('maxConnections', 'a positive integer', maxConnections);
  }
  if (sessionCheckMs !== undefined && sessionCheckMs !== 0) validateLeaseMs(sessionCheckMs, 'sessionCheckMs');
  if (fencingTable !== undefined && !validTableName(fencingTable)) {
    throw new InvalidLockOptionError(
      'fencingTable',
      '`table` or `database.table` of [A-Za-z0-9_$]',
      fencingTable,
    );
  }
  if (fencingSequence !== undefined && !validTableName(fencingSequence)) {
    throw new InvalidLockOptionError(
      'fencingSequence',
      '`sequence` or `database.sequence` of [A-Za-z0-9_$]',
      fencingSequence,
    );
  }
  return options;
}
