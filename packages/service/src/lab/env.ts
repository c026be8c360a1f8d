import { Redis } from 'ioredis';
import pg from 'pg';
import { RedisLockClient } from 'lockstock';
import { saleContext } from '../sale/context/context.js';
import { postgresDatabase } from '../sale/store/db.js';
import { migrate } from '../sale/store/migrate.js';
import type { LabServers } from './servers.js';
import { labQueries } from './sql/queries.js';
import type { LabEnv } from './types.js';

/** Connects a process of the lab to the shared Redis and PostgreSQL (and names the extra servers). */
export async function connectLab(
  redisUrl: string,
  databaseUrl: string,
  poolSize = 10,
  servers: LabServers = {},
): Promise<LabEnv & { close(): Promise<void> }> {
  const redis = new Redis(redisUrl);
  await redis.ping();
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  pool.on('error', () => undefined); // idle connections dropped at shutdown
  const db = postgresDatabase(databaseUrl, { max: 4 });
  const locks = new RedisLockClient({ redis });
  // The sale's context shares the lab's ScriptRunner: one write coalescer on the one connection.
  const sale = saleContext(redis);
  const shared = new Map<string, { value: unknown; close: () => Promise<void> }>();
  return {
    redis,
    redisUrl,
    pg: pool,
    databaseUrl,
    servers,
    db,
    locks,
    sale,
    scripts: sale.scripts,
    shared<T>(key: string, open: () => T, close: (value: T) => Promise<void>): T {
      const found = shared.get(key);
      if (found) return found.value as T;
      const value = open();
      shared.set(key, { value, close: () => close(value) });
      return value;
    },
    async close() {
      // Before the lab's own connections: a lock client may be built on them (env.locks is).
      const opened = [...shared.values()];
      shared.clear();
      await Promise.all(opened.map((entry) => entry.close()));
      await locks.close();
      await Promise.all([pool.end(), db.close()]);
      redis.disconnect();
    },
  };
}

/** The lab's tables and the sale tables (for the service strategy); idempotent. */
export async function prepareLabDatabase(env: LabEnv): Promise<void> {
  await migrate(env.db);
  await env.pg.query(labQueries.schema);
}
