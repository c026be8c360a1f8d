import type { Strategy } from '../types.js';
import { inspectSql, prepareSqlStock } from './support.js';

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
        const updated = await client.query(
          'UPDATE lab_stock SET stock = stock - 1 WHERE run_id = $1 AND stock >= 1',
          [run.runId],
        );
        if (updated.rowCount === 1) {
          await client.query('INSERT INTO lab_orders (run_id, buyer) VALUES ($1, $2)', [run.runId, buyer]);
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
