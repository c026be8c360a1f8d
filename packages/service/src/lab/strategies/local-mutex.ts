import { LocalLockClient } from 'lockstock/local';
import { lockSale } from './lock-sale.js';

/** Seeds 000/001/003: an in-process lock around read-check-write, committed before unlocking. */
export const localMutex = lockSale({
  name: 'local-mutex',
  // Beside the others in the report's lock charts, but not their like: it guards nothing across
  // processes and keeps its record in PostgreSQL.
  lockBackend: 'in-process (oversells)',
  title: 'In-process mutex (synchronized: lockstock LocalLockClient)',
  claim:
    'Flash-sale tutorials (Java’s synchronized or a ReentrantLock around the purchase): correct on one instance; as soon as two instances run behind a load balancer, each has its own lock and they oversell.',
  expectation: 'oversells_across_processes',
  // The seeds' record is the database; the lock is lockstock's local backend, one store per
  // process like a JVM-wide lock: real within the process and nothing outside it.
  record: 'sql',
  client: (env) =>
    env.shared(
      'local',
      () => new LocalLockClient({ namespace: 'lab' }),
      (client) => client.close(),
    ),
});
