import type { Strategy } from '../types.js';
import { inspectSql, interleave, prepareSqlStock } from './support.js';
import { labQueries } from '../sql/queries.js';

/** Seed 001: a version column and compare-and-set, retried a bounded number of times. */
export const sqlOptimistic: Strategy = {
  name: 'sql-optimistic',
  title: 'SQL optimistic lock (version column)',
  claim:
    'Seed 001: correct, but under contention most compare-and-sets fail (100 buyers for 50 units: 99 fail in a round), so stock stays unsold unless buyers retry.',
  expectation: 'may_leave_unsold',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    // options.retries: extra attempts after a lost compare-and-set (-1: until it succeeds or sells out)
    const retries = Number(run.options.retries ?? 0);
    return async (buyer) => {
      for (let attempt = 0; retries < 0 || attempt <= retries; attempt++) {
        const { rows } = await env.pg.query<{ stock: number; version: number }>(labQueries.readStockVersion, [
          run.runId,
        ]);
        const row = rows[0];
        if (!row || row.stock < 1) return false;
        await interleave();
        const client = await env.pg.connect();
        try {
          await client.query('BEGIN');
          const updated = await client.query(labQueries.decrementStockIfVersion, [run.runId, row.version]);
          if (updated.rowCount === 1) {
            await client.query(labQueries.insertOrder, [run.runId, buyer]);
          }
          await client.query('COMMIT');
          if (updated.rowCount === 1) return true;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      }
      return false; // gave up: someone else kept winning
    };
  },
  inspect: inspectSql,
};
