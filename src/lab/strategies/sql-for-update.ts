import type { Strategy } from '../types.js';
import { inspectSql, interleave, prepareSqlStock } from './support.js';

/** Seed 001: pessimistic lock — SELECT ... FOR UPDATE inside the transaction. */
export const sqlForUpdate: Strategy = {
  name: 'sql-for-update',
  title: 'SQL SELECT ... FOR UPDATE',
  claim:
    'Seed 001: lock the stock row for the whole read-check-write transaction; correct, at the price of serialising every buyer on the row.',
  expectation: 'correct',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    return async (buyer) => {
      const client = await env.pg.connect();
      try {
        await client.query('BEGIN');
        const { rows } = await client.query<{ stock: number }>(
          'SELECT stock FROM lab_stock WHERE run_id = $1 FOR UPDATE',
          [run.runId],
        );
        const stock = rows[0]?.stock ?? 0;
        let sold = false;
        if (stock >= 1) {
          await interleave();
          await client.query('UPDATE lab_stock SET stock = $2 WHERE run_id = $1', [run.runId, stock - 1]);
          await client.query('INSERT INTO lab_orders (run_id, buyer) VALUES ($1, $2)', [run.runId, buyer]);
          sold = true;
        }
        await client.query('COMMIT');
        return sold;
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
