import type { Strategy } from '../types.js';
import { inspectSql, interleave, prepareSqlStock } from './support.js';

/** Seed 003 "wrong case 1": SELECT, compute in memory, UPDATE to the computed value. */
export const naiveSql: Strategy = {
  name: 'naive-sql',
  title: 'SQL read, compute, write back',
  claim:
    'Seed 003, wrong case 1: each buyer writes back the stock it read minus one, so concurrent buyers overwrite each other (lost update).',
  expectation: 'oversells',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    return async (buyer) => {
      const { rows } = await env.pg.query<{ stock: number }>(
        'SELECT stock FROM lab_stock WHERE run_id = $1',
        [run.runId],
      );
      const stock = rows[0]?.stock ?? 0;
      if (stock < 1) return false;
      await interleave();
      await env.pg.query('UPDATE lab_stock SET stock = $2 WHERE run_id = $1', [run.runId, stock - 1]);
      await env.pg.query('INSERT INTO lab_orders (run_id, buyer) VALUES ($1, $2)', [run.runId, buyer]);
      return true;
    };
  },
  inspect: inspectSql,
};
