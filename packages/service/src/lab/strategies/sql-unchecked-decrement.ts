import type { Strategy } from '../types.js';
import { inspectSql, interleave, prepareSqlStock } from './support.js';
import { labQueries } from '../sql/queries.js';

/** Seed 003 "wrong case 2": the check in memory, the decrement in SQL. */
export const sqlUncheckedDecrement: Strategy = {
  name: 'sql-unchecked-decrement',
  title: 'SQL check in memory, SET stock = stock - 1',
  claim:
    'Seed 003, wrong case 2: every buyer passes the in-memory check before anyone decrements, so the stock goes below zero.',
  expectation: 'negative_stock',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    return async (buyer) => {
      const { rows } = await env.pg.query<{ stock: number }>(labQueries.readStock, [run.runId]);
      if ((rows[0]?.stock ?? 0) < 1) return false;
      await interleave();
      await env.pg.query(labQueries.decrementStockUnchecked, [run.runId]);
      await env.pg.query(labQueries.insertOrder, [run.runId, buyer]);
      return true;
    };
  },
  inspect: inspectSql,
};
