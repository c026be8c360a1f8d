import type { Strategy } from '../types.js';
import { inspectSql, prepareSqlStock } from './support.js';
import { labQueries } from '../sql/queries.js';

/** Seeds 001/003: the check is part of the UPDATE; one statement, no lock. */
export const sqlAtomic: Strategy = {
  name: 'sql-atomic',
  title: 'SQL UPDATE ... WHERE stock >= 1',
  claim:
    'Seeds 001, 003: let the database check and decrement in one conditional UPDATE; the row lock serialises buyers and nobody oversells.',
  expectation: 'correct',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    return async (buyer) => {
      const client = await env.pg.connect();
      try {
        await client.query('BEGIN');
        const updated = await client.query(labQueries.decrementStockIfAvailable, [run.runId]);
        if (updated.rowCount === 1) {
          await client.query(labQueries.insertOrder, [run.runId, buyer]);
        }
        await client.query('COMMIT');
        return updated.rowCount === 1;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    };
  },
  inspect: inspectSql,
};
