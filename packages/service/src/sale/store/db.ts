import pg from 'pg';
import { DependencyUnavailableError, isDatabaseUnavailable } from '../unavailable.js';

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** Anything that runs SQL: a pool, a transaction. */
export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/**
 * The order store's database: a PostgreSQL server (pg pool) or the embedded PGlite. The rest of the
 * code sees only this interface; SQL is written for both (bigint columns are selected as text).
 */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction: committed if it resolves, rolled back if it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface PostgresOptions {
  /** Connections in the pool. @default 10 */
  max?: number;
  /** How long to wait for a connection (a new one, or a free one from the pool), ms. @default 5000 */
  connectionTimeoutMillis?: number;
  /**
   * Told about every connection that failed outside a query (an idle pooled connection, or one held
   * by a transaction between two statements, when the server goes away). The failure also surfaces
   * as the next query's error; this is for logs. None: not reported.
   */
  onConnectionError?: (error: Error) => void;
  /** Told about every new connection made: after an outage, the first says the server is back. */
  onConnect?: () => void;
}

/** Rethrows a database error, as DependencyUnavailableError when it means the database is down. */
function rethrow(error: unknown): never {
  throw isDatabaseUnavailable(error) && !(error instanceof DependencyUnavailableError)
    ? new DependencyUnavailableError('database', error)
    : error;
}

/**
 * A pg Pool. Transactions take a pooled connection for their duration.
 *
 * A server that goes away (restart, `pg_ctl stop -m immediate`, a network cut) must never take the
 * process with it: node-postgres emits 'error' on a connection that dies while no query runs on it,
 * and an 'error' event nobody listens to crashes Node. The pool listens on its idle connections; a
 * transaction listens on the one it holds, and gives it back broken (so the pool discards it).
 * Queries that fail because the database is unavailable reject with DependencyUnavailableError.
 */
export function postgresDatabase(url: string, options: PostgresOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5_000,
    keepAlive: true,
  });
  const report = options.onConnectionError ?? (() => undefined);
  pool.on('error', (error) => report(error)); // an idle connection died; the pool has dropped it
  if (options.onConnect) pool.on('connect', options.onConnect);
  const run = async <R>(client: pg.Pool | pg.PoolClient, sql: string, params?: unknown[]) => {
    const result = await client.query(sql, params).catch(rethrow);
    return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
  };
  return {
    kind: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    exec: async (sql) => void (await pool.query(sql).catch(rethrow)),
    async transaction(fn) {
      const client = await pool.connect().catch(rethrow);
      let broken: Error | undefined;
      const onError = (error: Error) => {
        broken = error;
        report(error);
      };
      client.on('error', onError);
      try {
        await run(client, 'BEGIN');
        const result = await fn({
          query: (sql, params) => run(client, sql, params),
          exec: async (sql) => void (await client.query(sql).catch(rethrow)),
        });
        await run(client, 'COMMIT');
        return result;
      } catch (error) {
        if (isDatabaseUnavailable(error)) broken ??= error as Error;
        // A broken connection has no transaction left to roll back.
        if (!broken) await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
        return rethrow(error);
      } finally {
        client.off('error', onError);
        client.release(broken); // with an error: the pool destroys the connection instead of reusing it
      }
    },
    close: () => pool.end(),
  };
}

/**
 * Embedded PostgreSQL (PGlite, WASM) with its data in `dataDir` (undefined: in memory). With `fsync`
 * (and a `dataDir`), commits are synced to the disk, which PGlite does not do by default
 * (pglite-fsync.ts).
 */
export async function pgliteDatabase(dataDir?: string, options: { fsync?: boolean } = {}): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const db =
    options.fsync === true && dataDir !== undefined
      ? await (await import('./pglite-fsync.js')).createSyncedPGlite(PGlite, dataDir)
      : await PGlite.create(dataDir);
  // pg's rowCount is the rows a SELECT returned or the rows a write changed; PGlite reports
  // affectedRows 0 for a SELECT, so take whichever is larger (a write with RETURNING has both).
  const normalize = <R>(result: { rows: unknown[]; affectedRows?: number }): QueryResult<R> => ({
    rows: result.rows as R[],
    rowCount: Math.max(result.rows.length, result.affectedRows ?? 0),
  });
  return {
    kind: 'pglite',
    query: async (sql, params) => normalize(await db.query(sql, params)),
    exec: async (sql) => void (await db.exec(sql)),
    transaction: (fn) =>
      db.transaction((tx) =>
        fn({
          query: async (sql, params) => normalize(await tx.query(sql, params)),
          exec: async (sql) => void (await tx.exec(sql)),
        }),
      ),
    close: () => db.close(),
  };
}
