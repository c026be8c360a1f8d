import type { Strategy } from '../types.js';
import { inspectSql, interleave, prepareSqlStock } from './support.js';
import { labQueries } from '../sql/queries.js';

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
        const { rows } = await client.query<{ stock: number }>(labQueries.readStockForUpdate, [run.runId]);
        const stock = rows[0]?.stock ?? 0;
        let sold = false;
        if (stock >= 1) {
          await interleave();
          await client.query(labQueries.writeStock, [run.runId, stock - 1]);
          await client.query(labQueries.insertOrder, [run.runId, buyer]);
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
