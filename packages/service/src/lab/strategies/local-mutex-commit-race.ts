import { LocalLockClient } from 'lockstock/local';
import type { Strategy } from '../types.js';
import { inspectSql, interleave, prepareSqlStock } from './support.js';
import { labQueries } from '../sql/queries.js';

/** Seed 003 "wrong case 3" / seed 001: the lock is released before the transaction commits. */
export const localMutexCommitRace: Strategy = {
  name: 'local-mutex-commit-race',
  title: 'Mutex released before commit',
  claim:
    'Seed 003, wrong case 3: the lock sits inside the @Transactional method, so it is released before the commit and the next buyer reads stock that is about to change — oversold even on one instance.',
  expectation: 'oversells',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    const mutex = new LocalLockClient({ namespace: run.runId }).mutex('stock');
    return async (buyer) => {
      const client = await env.pg.connect();
      try {
        await client.query('BEGIN');
        let sold = false;
        const held = await mutex.acquire();
        try {
          const { rows } = await client.query<{ stock: number }>(labQueries.readStock, [run.runId]);
          const stock = rows[0]?.stock ?? 0;
          if (stock >= 1) {
            await client.query(labQueries.writeStock, [run.runId, stock - 1]);
            await client.query(labQueries.insertOrder, [run.runId, buyer]);
            sold = true;
          }
        } finally {
          await held.release(); // the mistake: the transaction is still open
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
