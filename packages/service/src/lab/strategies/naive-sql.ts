import type { Strategy } from '../types.js';
import { inspectSql, prepareSqlStock, sqlReadCheckWrite } from './support.js';

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
      return sqlReadCheckWrite(env, run, buyer);
    };
  },
  inspect: inspectSql,
};
