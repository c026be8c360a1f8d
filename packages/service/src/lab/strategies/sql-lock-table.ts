import { randomBytes } from 'node:crypto';
import type { Strategy } from '../types.js';
import { inspectSql, prepareSqlStock, sqlReadCheckWrite } from './support.js';
import { labQueries } from '../sql/queries.js';

/** Seed 003: the "insert lock" — a row with a unique key is the lock; poll until the INSERT works. */
export const sqlLockTable: Strategy = {
  name: 'sql-lock-table',
  title: 'SQL lock table (INSERT unique / DELETE)',
  claim:
    'Seed 003: INSERT a row with a unique name to take the lock, DELETE it to release, poll to wait; simple and correct, but waiting is polling and a crashed holder leaves the row behind.',
  expectation: 'correct',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    const name = `stock-${run.runId}`;
    const holder = randomBytes(6).toString('hex');
    return async (buyer) => {
      for (;;) {
        const taken = await env.pg.query(labQueries.takeLockRow, [name, `${holder}-${buyer}`]);
        if (taken.rowCount === 1) break;
        await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 3)); // the seed polls
      }
      try {
        return await sqlReadCheckWrite(env, run, buyer);
      } finally {
        await env.pg.query(labQueries.releaseLockRow, [name, `${holder}-${buyer}`]);
      }
    };
  },
  inspect: inspectSql,
};
