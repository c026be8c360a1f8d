import type { LockClient } from 'lockstock';
import type { LabEnv, LabRun, Strategy } from '../types.js';
import { labDatabase } from './databases.js';
import {
  inspectRedis,
  labKeys,
  prepareRedisStock,
  redisReadCheckWrite,
  sqlReadCheckWrite,
  sqlRecord,
} from './support.js';

/** Where the stock and the orders a lock guards are kept; the checker reads the same record. */
export type LockedRecord = 'redis' | 'sql';

const RECORDS = {
  redis: { prepare: prepareRedisStock, section: redisReadCheckWrite, inspect: inspectRedis },
  sql: {
    ...sqlRecord('postgres'),
    section: (env: LabEnv, run: LabRun, buyer: string) =>
      sqlReadCheckWrite(labDatabase(env, 'postgres'), run, buyer),
  },
} as const;

export interface LockSaleSpec extends Pick<
  Strategy,
  'name' | 'title' | 'claim' | 'expectation' | 'note' | 'servers' | 'teardown'
> {
  /** The backend's name as the report shows it ('Redis', 'ZooKeeper', …). */
  lockBackend: string;
  /**
   * This worker process's lock client for the run: kept across runs (`env.shared`), so a session
   * backend opens its session once per process, as an application does.
   */
  client(env: LabEnv, run: LabRun): LockClient;
  /**
   * The read-check-write the lock guards. 'redis' (GET, compare, SET, RPUSH the order) costs about
   * the same under every lock, so the lock-based rows compare the locks' own costs; 'sql' is the
   * same on PostgreSQL.
   * @default 'redis'
   */
  record?: LockedRecord;
  /** Coordinator setup beyond the stock (e.g. Redlock's masters); its options reach the workers. */
  prepareServers?(env: LabEnv, run: LabRun): Promise<Record<string, string | number>>;
}

/**
 * The seeds' lock-based sale on any lockstock backend: each buyer runs the unguarded
 * read-check-write inside `mutex(name).run()` of the backend's client. One body for every backend,
 * so the rows differ only by the lock underneath.
 */
export function lockSale(spec: LockSaleSpec): Strategy {
  const { client, record = 'redis', prepareServers, ...described } = spec;
  const store = RECORDS[record];
  return {
    ...described,
    async prepare(env, run) {
      await store.prepare(env, run);
      return prepareServers?.(env, run);
    },
    async buyer(env, run) {
      const lock = client(env, run).mutex(labKeys(run.runId).lock);
      return (buyer) => lock.run(() => store.section(env, run, buyer));
    },
    inspect: store.inspect,
  };
}
