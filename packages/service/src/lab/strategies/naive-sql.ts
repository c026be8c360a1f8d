import type { Strategy } from '../types.js';
import { labDatabase } from './databases.js';
import { sqlReadCheckWrite, sqlRecord } from './support.js';

/** Seed 003 "wrong case 1": SELECT, compute in memory, UPDATE to the computed value. */
export const naiveSql: Strategy = {
  name: 'naive-sql',
  title: 'SQL read, compute, write back',
  claim:
    'Flash-sale tutorials, the first "wrong way": each buyer writes back the stock it read minus one, so concurrent buyers overwrite each other (lost update).',
  expectation: 'oversells',
  ...sqlRecord('postgres'),
  async buyer(env, run) {
    const db = labDatabase(env, 'postgres');
    return (buyer) => sqlReadCheckWrite(db, run, buyer);
  },
};
