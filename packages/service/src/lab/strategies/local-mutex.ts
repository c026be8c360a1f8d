import { LocalLockClient } from 'lockstock/local';
import type { Strategy } from '../types.js';
import { inspectSql, prepareSqlStock, sqlReadCheckWrite } from './support.js';

/** Seeds 000/001/003: an in-process lock around read-check-write, committed before unlocking. */
export const localMutex: Strategy = {
  name: 'local-mutex',
  title: 'In-process mutex (synchronized: lockstock LocalLockClient)',
  claim:
    'Seeds 000, 001, 003: correct on one instance; as soon as two instances run behind a load balancer, each has its own lock and they oversell.',
  expectation: 'oversells_across_processes',
  prepare: prepareSqlStock,
  async buyer(env, run) {
    // One store per process and run, like a JVM-wide lock: lockstock's local backend, whose locks
    // are real within the process and nothing outside it.
    const mutex = new LocalLockClient({ namespace: run.runId }).mutex('stock');
    return (buyer) => mutex.run(() => sqlReadCheckWrite(env, run, buyer));
  },
  inspect: inspectSql,
};
