import type { Strategy } from '../types.js';
import { DATABASES, labDatabase, type LabDatabaseName } from './databases.js';
import { interleave, sqlRecord } from './support.js';

/** Seed 001: a version column and compare-and-set, retried a bounded number of times. */
export function sqlOptimisticOn(database: LabDatabaseName): Strategy {
  const { prefix, label, servers } = DATABASES[database];
  return {
    name: `${prefix}-optimistic`,
    title: `${label} optimistic lock (version column)`,
    claim:
      'Database locking tutorials (optimistic locking with a version column): correct, but under contention most compare-and-sets fail (100 buyers for 50 units: 99 fail in a round), so stock stays unsold unless buyers retry.',
    expectation: 'may_leave_unsold',
    servers,
    ...sqlRecord(database),
    async buyer(env, run) {
      const db = labDatabase(env, database);
      // options.retries: extra attempts after a lost compare-and-set (-1: until it succeeds or sells out)
      const retries = Number(run.options.retries ?? 0);
      return async (buyer) => {
        for (let attempt = 0; retries < 0 || attempt <= retries; attempt++) {
          const { rows } = await db.query<{ stock: number; version: number }>('readStockVersion', [
            run.runId,
          ]);
          const row = rows[0];
          if (!row || row.stock < 1) return false;
          await interleave();
          const won = await db.transaction(async (query) => {
            const updated = await query('decrementStockIfVersion', [run.runId, row.version]);
            if (updated.rowCount === 1) await query('insertOrder', [run.runId, buyer]);
            return updated.rowCount === 1;
          });
          if (won) return true;
        }
        return false; // gave up: someone else kept winning
      };
    },
  };
}

export const sqlOptimistic = sqlOptimisticOn('postgres');
export const mysqlOptimistic = sqlOptimisticOn('mysql');
