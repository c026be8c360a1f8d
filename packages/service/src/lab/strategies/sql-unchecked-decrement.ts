import type { Strategy } from '../types.js';
import { DATABASES, labDatabase, type LabDatabaseName } from './databases.js';
import { interleave, sqlRecord } from './support.js';

/** Seed 003 "wrong case 2": the check in memory, the decrement in SQL. */
export function sqlUncheckedDecrementOn(database: LabDatabaseName): Strategy {
  const { prefix, label, servers } = DATABASES[database];
  return {
    name: `${prefix}-unchecked-decrement`,
    title: `${label} check in memory, SET stock = stock - 1`,
    claim:
      'Flash-sale tutorials, the second "wrong way": every buyer passes the in-memory check before anyone decrements, so the stock goes below zero.',
    expectation: 'negative_stock',
    servers,
    ...sqlRecord(database),
    async buyer(env, run) {
      const db = labDatabase(env, database);
      return async (buyer) => {
        const { rows } = await db.query<{ stock: number }>('readStock', [run.runId]);
        if ((rows[0]?.stock ?? 0) < 1) return false;
        await interleave();
        await db.query('decrementStockUnchecked', [run.runId]);
        await db.query('insertOrder', [run.runId, buyer]);
        return true;
      };
    },
  };
}

export const sqlUncheckedDecrement = sqlUncheckedDecrementOn('postgres');
export const mysqlUncheckedDecrement = sqlUncheckedDecrementOn('mysql');
