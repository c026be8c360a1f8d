import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresDatabase, type Database } from '../../src/sale/store/db.js';
import { DependencyUnavailableError, unavailableDependency } from '../../src/sale/unavailable.js';
import { PostgresServer } from '@lockstock/servers';

let postgres: PostgresServer;
let db: Database;
const connectionErrors: Error[] = [];

beforeAll(async () => {
  postgres = await PostgresServer.start();
  db = postgresDatabase(postgres.url, { max: 4, onConnectionError: (error) => connectionErrors.push(error) });
});
afterAll(async () => {
  await db.close();
  await postgres.stop();
});

/** Polls `attempt` until it resolves (observable state, bounded by the test's timeout). */
async function eventually<T>(attempt: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await attempt();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('PostgreSQL stopped with pg_ctl stop -m immediate', () => {
  // Before the fix, the connection held by the transaction emitted an 'error' event nobody listened
  // to ("Connection terminated unexpectedly"), which kills the process: vitest reports it as an
  // unhandled error and the run fails.
  it(
    'fails the open transaction and the queries as "database unavailable", crashes nothing, and recovers',
    { timeout: 20_000 },
    async () => {
      await db.query('SELECT 1'); // an idle pooled connection, which will die too
      let inside!: () => void;
      const entered = new Promise<void>((resolve) => (inside = resolve));
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const transaction = db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        inside();
        await held; // the connection is checked out, no query running on it, when the server dies
        await tx.query('SELECT 2');
      });
      const outcome = transaction.then(
        () => 'committed',
        (error: unknown) => error,
      );
      await entered;
      await postgres.stopImmediately();
      // The dead connection's 'error' arrives on its own; wait for it before using the connection.
      await eventually(async () => expect(connectionErrors.length).toBeGreaterThanOrEqual(1));
      release();
      const error = await outcome;
      expect(error).toBeInstanceOf(DependencyUnavailableError);
      expect(unavailableDependency(error)).toBe('database');

      const down = await db.query('SELECT 1').catch((e: unknown) => e);
      expect(down).toBeInstanceOf(DependencyUnavailableError);
      expect((down as DependencyUnavailableError).code).toBe('ECONNREFUSED');

      await postgres.restart();
      const { rows } = await eventually(() => db.query<{ one: number }>('SELECT 1 AS one'));
      expect(rows).toEqual([{ one: 1 }]);
      expect(await db.transaction(async (tx) => (await tx.query('SELECT 3 AS n')).rows)).toEqual([{ n: 3 }]);
    },
  );

  it("keeps query errors that are the query's own as they are", async () => {
    const error = (await db.query('SELECT 1/0').catch((e: unknown) => e)) as { code?: string };
    expect(error).not.toBeInstanceOf(DependencyUnavailableError);
    expect(error.code).toBe('22012');
    expect(unavailableDependency(error)).toBeUndefined();
  });
});
