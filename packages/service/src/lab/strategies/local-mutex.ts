import type { Strategy } from '../types.js';
import { inspectSql, LocalMutex, prepareSqlStock, sqlReadCheckWrite } from './support.js';

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
        return await sqlReadCheckWrite(env, run, buyer);
      } finally {
        unlock();
      }
    };
  },
  inspect: inspectSql,
};
