import type { Strategy } from '../types.js';
import { inspectSql, interleave, LocalMutex, prepareSqlStock } from './support.js';
import { labQueries } from '../sql/queries.js';

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
        const { rows } = await env.pg.query<{ stock: number }>(labQueries.readStock, [run.runId]);
        const stock = rows[0]?.stock ?? 0;
        if (stock < 1) return false;
        await interleave();
        await env.pg.query(labQueries.writeStock, [run.runId, stock - 1]);
        await env.pg.query(labQueries.insertOrder, [run.runId, buyer]);
        return true;
      } finally {
        unlock();
      }
    };
  },
  inspect: inspectSql,
};
