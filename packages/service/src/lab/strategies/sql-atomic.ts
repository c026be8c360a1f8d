import type { Strategy } from '../types.js';
import { DATABASES, labDatabase, type LabDatabaseName } from './databases.js';
import { sqlRecord } from './support.js';

/** Seeds 001/003: the check is part of the UPDATE; one statement, no lock. */
export function sqlAtomicOn(database: LabDatabaseName): Strategy {
  const { prefix, label, servers } = DATABASES[database];
  return {
    name: `${prefix}-atomic`,
    title: `${label} UPDATE ... WHERE stock >= 1`,
    claim:
      'Database and flash-sale tutorials: let the database check and decrement in one conditional UPDATE; the row lock serialises buyers and nobody oversells.',
    expectation: 'correct',
    servers,
    ...sqlRecord(database),
    async buyer(env, run) {
      const db = labDatabase(env, database);
      return (buyer) =>
        db.transaction(async (query) => {
          const updated = await query('decrementStockIfAvailable', [run.runId]);
          if (updated.rowCount === 1) await query('insertOrder', [run.runId, buyer]);
          return updated.rowCount === 1;
        });
    },
  };
}

export const sqlAtomic = sqlAtomicOn('postgres');
export const mysqlAtomic = sqlAtomicOn('mysql');
