import { LockError } from '../locks/errors.js';

/**
 * Session advisory locks were asked for through a pooler that does not keep a client on one server
 * session (pgbouncer's transaction or statement mode): a lock taken in one transaction would stay on a
 * server connection other clients reuse, and its unlock could run on another. Refused before any lock
 * is taken. Connect directly (or through a session-mode pool), or use `scope: 'transaction'`.
 */
export class TransactionPoolerError extends LockError {
  override readonly name = 'TransactionPoolerError';
  readonly code = 'ERR_TRANSACTION_POOLER';
  constructor(
    lockName: string,
    /** What gave the pooler away. */
    readonly evidence: string,
  ) {
    super(
      lockName,
      `Lock "${lockName}" refused: the connections go through a pooler that does not keep a session on ` +
        `one server connection (transaction or statement pooling: ${evidence}). A session advisory lock ` +
        `would stay behind on a server connection that other clients reuse. Connect to PostgreSQL ` +
        `directly or through a session-mode pool, or create the client with scope: 'transaction' ` +
        `(each hold keeps a transaction open, and its lock ends with it).`,
    );
  }
}

/** The connection a hold was pinned to ended (dropped, terminated, closed): the `cause` of its loss. */
export class PostgresSessionError extends Error {
  override readonly name = 'PostgresSessionError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The SQLSTATE of a pg error, if it is one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Whether a statement's error means the session itself is over: a connection exception (SQLSTATE
 * class 08), operator intervention (57P01 terminated, 57P02 crash shutdown, 57P03), any FATAL, or
 * pg's own report of a closed connection.
 */
export function endsSession(error: unknown): boolean {
  const state = sqlState(error) ?? '';
  if (state.startsWith('08') || state.startsWith('57P')) return true;
  if ((error as { severity?: unknown } | null)?.severity === 'FATAL') return true;
  return (
    error instanceof Error && /Connection terminated|Client was closed|not queryable/i.test(error.message)
  );
}
