import { LocalLockClient } from 'lockstock/local';
import type { Strategy } from '../types.js';
import { labDatabase } from './databases.js';
import { interleave, sqlRecord } from './support.js';

/** Seed 003 "wrong case 3" / seed 001: the lock is released before the transaction commits. */
export const localMutexCommitRace: Strategy = {
  name: 'local-mutex-commit-race',
  title: 'Mutex released before commit',
  claim:
    'Flash-sale tutorials for Spring, the third "wrong way": the lock sits inside the @Transactional method, so it is released before the commit and the next buyer reads stock that is about to change — oversold even on one instance.',
  expectation: 'oversells',
  ...sqlRecord('postgres'),
  async buyer(env, run) {
    const db = labDatabase(env, 'postgres');
    const mutex = new LocalLockClient({ namespace: run.runId }).mutex('stock');
    return (buyer) =>
      // The transaction commits when this function returns: after the mutex was released.
      db.transaction(async (query) => {
        let sold = false;
        const held = await mutex.acquire();
        try {
          const { rows } = await query<{ stock: number }>('readStock', [run.runId]);
          const stock = rows[0]?.stock ?? 0;
          if (stock >= 1) {
            await query('writeStock', [run.runId, stock - 1]);
            await query('insertOrder', [run.runId, buyer]);
            sold = true;
          }
        } finally {
          await held.release(); // the mistake: the transaction is still open
        }
        await interleave();
        return sold;
      });
  },
};
