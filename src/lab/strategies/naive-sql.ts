import type { Strategy } from '../types.js';
import { inspectSql, interleave, prepareSqlStock } from './support.js';
import { labQueries } from '../sql/queries.js';

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
      const { rows } = await env.pg.query<{ stock: number }>(labQueries.readStock, [run.runId]);
      const stock = rows[0]?.stock ?? 0;
      if (stock < 1) return false;
      await interleave();
      await env.pg.query(labQueries.writeStock, [run.runId, stock - 1]);
      await env.pg.query(labQueries.insertOrder, [run.runId, buyer]);
      return true;
    };
  },
  inspect: inspectSql,
};
