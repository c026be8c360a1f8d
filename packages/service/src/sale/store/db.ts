import pg from 'pg';

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

/** A pg Pool. Transactions take a pooled connection for their duration. */
export function postgresDatabase(url: string, options: { max?: number } = {}): Database {
  const pool = new pg.Pool({ connectionString: url, max: options.max ?? 10 });
  // An idle pooled connection that dies (server restart) must not crash the process; the next
  // query on the pool gets a fresh connection.
  pool.on('error', () => undefined);
  const run = async <R>(client: pg.Pool | pg.PoolClient, sql: string, params?: unknown[]) => {
    const result = await client.query(sql, params);
    return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
  };
  return {
    kind: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    exec: async (sql) => void (await pool.query(sql)),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn({
          query: (sql, params) => run(client, sql, params),
          exec: async (sql) => void (await client.query(sql)),
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined); // the connection may be gone already
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/** Embedded PostgreSQL (PGlite, WASM) with its data in `dataDir` (undefined: in memory). */
export async function pgliteDatabase(dataDir?: string): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create(dataDir);
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
