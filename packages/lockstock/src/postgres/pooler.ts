import { pg, type Pool } from './driver.js';
import { TransactionPoolerError } from './errors.js';
import type { PostgresSession } from './session.js';
import { SQL } from './sql.js';

/** What sits between the client and PostgreSQL, as far as sessions go. */
export type PoolerVerdict = 'direct' | 'session-pooler';

const backendPid = async (client: { query: Pool['query'] }): Promise<number> => {
  const { rows } = await client.query<{ pid: number }>(SQL.backendPid);
  return Number(rows[0]?.pid);
};

/**
 * Checks, before the first session lock, that the connections keep one server session each — the
 * thing a transaction-mode pooler (pgbouncer's `pool_mode = transaction`, and statement mode) breaks:
 * there a client is lent a server connection per transaction, so a session advisory lock stays on a
 * server connection other clients are then lent, and its unlock may run on another.
 *
 * 1. At startup a connection announces the process that serves it (BackendKeyData). A pooler
 *    announces a key of its own, so when `pg_backend_pid()` is the announced process, nothing pools
 *    this connection: done ('direct'). A plain TCP proxy passes the server's key on: also direct.
 * 2. Otherwise a pooler answers. The session's backend is asked for (A), then a second connection
 *    opens a transaction and asks for its own (B), then the session asks again (A'). A pooler that
 *    keeps sessions gives the second connection another server connection and the session the same
 *    one: B ≠ A = A'. A transaction pooler lends the server connection the session just gave back
 *    (pgbouncer reuses the last one first), so B = A, or moves the session: A' ≠ A. Either refuses.
 *
 * A transaction pooler that hands out server connections round-robin can pass step 2 by chance; each
 * session also checks every answer's backend against its first (PostgresSession.query), and refuses as
 * soon as one differs.
 */
export async function checkPooler(
  pool: Pool,
  session: PostgresSession,
  lockName: string,
  report: (error: unknown) => void,
): Promise<PoolerVerdict> {
  const announced = (session.client as unknown as { processID: number | null }).processID;
  const first = await backendPid(session.client);
  if (announced === first) return 'direct';
  // A client of its own for the probe: a pool of one connection (or an exhausted one) must not
  // deadlock the check.
  const other = new (pg().Client)(pool.options);
  other.on('error', report); // dropped while idle: its queries would fail too
  await other.connect();
  try {
    await other.query('BEGIN').catch((error: unknown) => {
      // pgbouncer's statement mode refuses transaction blocks outright.
      throw new TransactionPoolerError(
        lockName,
        `the pooler refused a transaction block: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
    const lent = await backendPid(other);
    const again = await backendPid(session.client);
    if (lent === first) {
      throw new TransactionPoolerError(
        lockName,
        `another client was lent server backend ${first} while this session was open`,
      );
    }
    if (again !== first) {
      throw new TransactionPoolerError(
        lockName,
        `one connection was answered by server backend ${first}, then by ${again}`,
      );
    }
    return 'session-pooler';
  } finally {
    await other.end().catch(() => undefined);
  }
}
