import type { Strategy } from '../types.js';
import { inspectSql, interleave, LocalMutex, prepareSqlStock } from './support.js';

/** Seed 003 "wrong case 3" / seed 001: the lock is released before the transaction commits. */
export const localMutexCommitRace: Strategy = {
  name: 'local-mutex-commit-race',
  title: 'Mutex released before commit',
  claim:
    'Seed 003, wrong case 3: the lock sits inside the @Transactional method, so it is released before the commit and the next buyer reads stock that is about to change — oversold even on one instance.',
  expectation: 'oversells',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    const mutex = new LocalMutex();
    return async (buyer) => {
      const client = await env.pg.connect();
      try {
        await client.query('BEGIN');
        let sold = false;
        const unlock = await mutex.lock();
        try {
          const { rows } = await client.query<{ stock: number }>(
            'SELECT stock FROM lab_stock WHERE run_id = $1',
            [run.runId],
          );
          const stock = rows[0]?.stock ?? 0;
          if (stock >= 1) {
            await client.query('UPDATE lab_stock SET stock = $2 WHERE run_id = $1', [run.runId, stock - 1]);
            await client.query('INSERT INTO lab_orders (run_id, buyer) VALUES ($1, $2)', [run.runId, buyer]);
            sold = true;
          }
        } finally {
          unlock(); // the mistake: the transaction is still open
        }
        await interleave();
        await client.query('COMMIT');
        return sold;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    };
  },
  inspect: inspectSql,
};
