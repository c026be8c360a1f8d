import type { Strategy } from '../types.js';
import { inspectSql, interleave, LocalMutex, prepareSqlStock } from './support.js';

/** Seeds 000/001/003: an in-process lock around read-check-write, committed before unlocking. */
export const localMutex: Strategy = {
  name: 'local-mutex',
  title: 'In-process mutex (synchronized)',
  claim:
    'Seeds 000, 001, 003: correct on one instance; as soon as two instances run behind a load balancer, each has its own lock and they oversell.',
  expectation: 'oversells_across_processes',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    const mutex = new LocalMutex(); // one per process, like a JVM-wide lock
    return async (buyer) => {
      const unlock = await mutex.lock();
      try {
        const { rows } = await env.pg.query<{ stock: number }>(
          'SELECT stock FROM lab_stock WHERE run_id = $1',
          [run.runId],
        );
        const stock = rows[0]?.stock ?? 0;
        if (stock < 1) return false;
        await interleave();
        await env.pg.query('UPDATE lab_stock SET stock = $2 WHERE run_id = $1', [run.runId, stock - 1]);
        await env.pg.query('INSERT INTO lab_orders (run_id, buyer) VALUES ($1, $2)', [run.runId, buyer]);
        return true;
      } finally {
        unlock();
      }
    };
  },
  inspect: inspectSql,
};
