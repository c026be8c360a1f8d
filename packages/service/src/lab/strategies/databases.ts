import mysql from 'mysql2/promise';
import type { LabServerKind } from '../servers.js';
import { mysqlLabQueries, mysqlLabSchema } from '../sql/mysql/queries.js';
import { labQueries } from '../sql/queries.js';
import type { LabEnv } from '../types.js';

/** The databases the lab's SQL strategies run on. */
export type LabDatabaseName = 'postgres' | 'mysql';

/** A statement of the SQL strategies, by its name in `labQueries` / `mysqlLabQueries`. */
export type LabStatement = keyof typeof mysqlLabQueries;

export type LabParam = string | number;

/** Rows a statement returned, and how many rows it returned or changed. */
export interface LabSqlResult<R> {
  rows: R[];
  rowCount: number;
}

export type LabQuery = <R = unknown>(
  statement: LabStatement,
  params: readonly LabParam[],
) => Promise<LabSqlResult<R>>;

/** The lab's tables on one database, behind the calls the seeds' code makes. */
export interface LabDatabase {
  readonly name: LabDatabaseName;
  /** Creates the lab's tables if missing (coordinator, before a run). */
  prepare(): Promise<void>;
  /** One statement on any connection of the pool, in a transaction of its own (autocommit). */
  query: LabQuery;
  /**
   * `fn`'s statements in one transaction on one connection: committed when `fn` resolves, rolled
   * back when it throws (the error is rethrown).
   */
  transaction<T>(fn: (query: LabQuery) => Promise<T>): Promise<T>;
  /**
   * Whether `error` says the database rolled the statement back to break a deadlock (PostgreSQL
   * 40P01, MySQL ER_LOCK_DEADLOCK 1213): nothing it did stays, and trying again is the remedy.
   */
  isDeadlock(error: unknown): boolean;
}

/** How a strategy on each database is named and titled, and what the lab must start for it. */
export const DATABASES: Record<
  LabDatabaseName,
  { prefix: string; label: string; servers: readonly LabServerKind[] }
> = {
  postgres: { prefix: 'sql', label: 'SQL', servers: [] },
  mysql: { prefix: 'mysql', label: 'MySQL', servers: ['mysql'] },
};

export function labDatabase(env: LabEnv, name: LabDatabaseName): LabDatabase {
  return name === 'postgres' ? postgresDatabase(env) : mysqlDatabase(env);
}

function postgresDatabase(env: LabEnv): LabDatabase {
  const run =
    (q: {
      query: (text: string, params: LabParam[]) => Promise<{ rows: unknown[]; rowCount: number | null }>;
    }) =>
    async <R>(statement: LabStatement, params: readonly LabParam[]): Promise<LabSqlResult<R>> => {
      const result = await q.query(labQueries[statement], [...params]);
      return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
    };
  return {
    name: 'postgres',
    // The runner made the tables (prepareLabDatabase), with the sale layer's.
    prepare: () => Promise.resolve(),
    query: run(env.pg),
    isDeadlock: (error) => (error as { code?: unknown } | undefined)?.code === '40P01',
    async transaction(fn) {
      const client = await env.pg.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(run(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined); // the connection may be what failed
        throw error;
      } finally {
        client.release();
      }
    },
  };
}

function mysqlDatabase(env: LabEnv): LabDatabase {
  const uri = env.servers.mysql;
  if (uri === undefined) throw new Error('the lab has no MySQL server (the strategy must list it)');
  // One pool per process, kept across runs; as many connections as the PostgreSQL pool of a worker.
  const pool = env.shared(
    `mysql ${uri}`,
    () => mysql.createPool({ uri, connectionLimit: 12 }),
    (p) => p.end(),
  );
  const run =
    (q: mysql.Pool | mysql.PoolConnection) =>
    async <R>(statement: LabStatement, params: readonly LabParam[]): Promise<LabSqlResult<R>> => {
      const { text, order } = mysqlLabQueries[statement];
      const [result] = await q.query(
        text,
        order.map((i) => params[i]),
      );
      if (Array.isArray(result)) return { rows: result as R[], rowCount: result.length };
      return { rows: [], rowCount: (result as mysql.ResultSetHeader).affectedRows };
    };
  return {
    name: 'mysql',
    async prepare() {
      for (const statement of mysqlLabSchema) await pool.query(statement);
    },
    query: run(pool),
    isDeadlock: (error) => (error as { errno?: unknown } | undefined)?.errno === 1213,
    async transaction(fn) {
      const connection = await pool.getConnection();
      try {
        await connection.beginTransaction();
        const result = await fn(run(connection));
        await connection.commit();
        return result;
      } catch (error) {
        await connection.rollback().catch(() => undefined); // the connection may be what failed
        throw error;
      } finally {
        connection.release();
      }
    },
  };
}
