import { randomBytes } from 'node:crypto';
import type { Strategy } from '../types.js';
import { DATABASES, labDatabase, type LabDatabaseName } from './databases.js';
import { sqlReadCheckWrite, sqlRecord } from './support.js';

/** Seed 003: the "insert lock" — a row with a unique key is the lock; poll until the INSERT works. */
export function sqlLockTableOn(database: LabDatabaseName): Strategy {
  const { prefix, label, servers } = DATABASES[database];
  return {
    name: `${prefix}-lock-table`,
    title: `${label} lock table (INSERT unique / DELETE)`,
    claim:
      'Distributed-lock posts (“a lock table in the database”): INSERT a row with a unique name to take the lock, DELETE it to release, poll to wait; simple and correct, but waiting is polling and a crashed holder leaves the row behind.',
    expectation: 'correct',
    ...(database === 'mysql'
      ? {
          note: 'On InnoDB the insert lock deadlocks by itself: an INSERT that meets the held row takes a shared lock on it while its holder DELETEs, and InnoDB rolls one of them back (ER_LOCK_DEADLOCK). The tutorials’ code would fail those buyers (49 of 300 attempts in a default two-run lab on a 2-core VM); this one counts a deadlocked take as busy and polls again, and retries a deadlocked release, as MySQL’s manual prescribes.',
        }
      : {}),
    servers,
    ...sqlRecord(database),
    async buyer(env, run) {
      const db = labDatabase(env, database);
      const name = `stock-${run.runId}`;
      const holder = randomBytes(6).toString('hex');
      // A statement the database rolled back to break a deadlock did nothing: a take is refused, a
      // release must be sent again (else the row would hold the lock for good).
      const take = (owner: string) =>
        db.query('takeLockRow', [name, owner]).then(
          (taken) => taken.rowCount === 1,
          (error: unknown) => (db.isDeadlock(error) ? false : Promise.reject(error)),
        );
      const release = async (owner: string) => {
        for (;;) {
          try {
            return await db.query('releaseLockRow', [name, owner]);
          } catch (error) {
            if (!db.isDeadlock(error)) throw error;
          }
        }
      };
      return async (buyer) => {
        const owner = `${holder}-${buyer}`;
        while (!(await take(owner))) {
          await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 3)); // the seed polls
        }
        try {
          return await sqlReadCheckWrite(db, run, buyer);
        } finally {
          await release(owner);
        }
      };
    },
  };
}

export const sqlLockTable = sqlLockTableOn('postgres');
export const mysqlLockTable = sqlLockTableOn('mysql');
