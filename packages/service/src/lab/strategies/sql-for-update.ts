import type { Strategy } from '../types.js';
import { DATABASES, labDatabase, type LabDatabaseName } from './databases.js';
import { interleave, sqlRecord } from './support.js';

/** Seed 001: pessimistic lock — SELECT ... FOR UPDATE inside the transaction. */
export function sqlForUpdateOn(database: LabDatabaseName): Strategy {
  const { prefix, label, servers } = DATABASES[database];
  return {
    name: `${prefix}-for-update`,
    title: `${label} SELECT ... FOR UPDATE`,
    claim:
      'Database locking tutorials (pessimistic locking): lock the stock row for the whole read-check-write transaction; correct, at the price of serialising every buyer on the row.',
    expectation: 'correct',
    ...(database === 'mysql'
      ? {
          note: 'On InnoDB (REPEATABLE READ by default) the FOR UPDATE is what makes it correct twice over: it locks the row and reads its latest committed version — a plain SELECT in the same transaction would read the transaction’s snapshot.',
        }
      : {}),
    servers,
    ...sqlRecord(database),
    async buyer(env, run) {
      const db = labDatabase(env, database);
      return (buyer) =>
        db.transaction(async (query) => {
          const { rows } = await query<{ stock: number }>('readStockForUpdate', [run.runId]);
          const stock = rows[0]?.stock ?? 0;
          if (stock < 1) return false;
          await interleave();
          await query('writeStock', [run.runId, stock - 1]);
          await query('insertOrder', [run.runId, buyer]);
          return true;
        });
    },
  };
}

export const sqlForUpdate = sqlForUpdateOn('postgres');
export const mysqlForUpdate = sqlForUpdateOn('mysql');
