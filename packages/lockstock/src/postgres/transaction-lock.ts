import { InvalidLockOptionError, LockDeadlockError, LockTimeoutError } from '../locks/errors.js';
import type { Queryable } from '../locks/fencing/postgres-fenced-store.js';
import { validateWaitMs } from '../backend/index.js';
import { sqlState } from './errors.js';
import { lockKey } from './keys.js';
import { SQL } from './sql.js';

/** Options of `withTransactionLock`: how long to wait, shared or exclusive, and the token sequence. */
export interface TransactionLockOptions {
  /**
   * How long to wait for the lock, ms; 0 tries once. Without it the transaction's own `lock_timeout`
   * applies (by default none: it waits as long as it takes).
   * @default Infinity
   */
  waitMs?: number;
  /** Take the lock shared (the read side of the name's read-write lock). @default false */
  shared?: boolean;
  /**
   * The sequence fencing tokens are drawn from (a name, schema-qualified if need be, that exists);
   * without one the token is 0. A PostgresLockClient's `withTransactionLock` passes its own.
   */
  fencingSequence?: string;
}

/** The lock `fn` runs under: it is held until the transaction commits or rolls back. */
export interface TransactionLock {
  readonly name: string;
  /** The advisory-lock key (keys.ts): the same a PostgresLockClient's locks of this name use. */
  readonly key: bigint;
  readonly shared: boolean;
  /** Strictly increasing per name when drawn from a sequence; 0 without one. */
  readonly fencingToken: number;
}

const SAVEPOINT = 'lockstock_transaction_lock';

/**
 * Runs `fn` under the advisory lock of `name`, taken inside the caller's open transaction on `tx` (a
 * pg client after BEGIN, or anything with its `query`): the lock ends with the transaction — COMMIT
 * or ROLLBACK, whatever `fn` does — never earlier, and nothing needs releasing. For code that already
 * holds a transaction and wants its writes and its lock to end together. It is the same lock as a
 * PostgresLockClient's mutex, reentrant, fair or write lock of `name` (and the read side when shared).
 *
 * Works through transaction-mode poolers (the transaction keeps its server connection). Waiting is in
 * PostgreSQL's lock queue; a bounded wait runs in a savepoint, so a timeout (LockTimeoutError) leaves
 * the caller's transaction usable, and so does a deadlock PostgreSQL finds between this transaction and
 * another (LockDeadlockError, `detectedBy: 'server'`). Outside a transaction it throws InvalidLockOptionError: a
 * transaction-level lock there would end with its own statement.
 */
export async function withTransactionLock<T>(
  tx: Queryable,
  name: string,
  fn: (lock: TransactionLock) => Promise<T>,
  options: TransactionLockOptions = {},
): Promise<T> {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidLockOptionError('name', 'a non-empty string', name);
  }
  const waitMs = validateWaitMs(options.waitMs ?? Infinity);
  const shared = options.shared === true;
  const sequence = options.fencingSequence ?? null;
  const key = lockKey(name);
  try {
    await tx.query(`SAVEPOINT ${SAVEPOINT}`);
  } catch (error) {
    if (sqlState(error) !== '25P01') throw error; // no_active_sql_transaction
    throw new InvalidLockOptionError(
      'tx',
      'a client inside an open transaction (BEGIN first): outside one, a transaction-level lock ends with its own statement',
      'no transaction',
    );
  }
  let token: number;
  try {
    const { rows } =
      waitMs === 0
        ? await tx.query(SQL.transactionTryLock, [key.toString(), shared, sequence])
        : await tx.query(SQL.transactionLock, [
            key.toString(),
            shared,
            waitMs === Infinity ? null : String(Math.max(1, Math.ceil(waitMs))),
            sequence,
          ]);
    const drawn = rows[0]?.token;
    if (drawn === null || drawn === undefined) throw new LockTimeoutError(name, 0);
    token = Number(drawn);
    await tx.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
  } catch (error) {
    const state = sqlState(error);
    if (!(error instanceof LockTimeoutError) && state !== '55P03' && state !== '40P01') throw error;
    // Refused, lock_timeout, or chosen as a deadlock's victim (the transaction's locks form a cycle
    // with another's, which PostgreSQL finds: one connection): back to before the try — the caller's
    // transaction stays usable, its earlier locks held.
    await tx.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
    await tx.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
    if (state === '40P01') throw new LockDeadlockError(name, undefined, 'server', [], { cause: error });
    throw error instanceof LockTimeoutError ? error : new LockTimeoutError(name, waitMs);
  }
  return fn({ name, key, shared, fencingToken: token });
}
