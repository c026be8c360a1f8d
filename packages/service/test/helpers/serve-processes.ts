import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { freePort, PostgresServer, RedisServer } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy, type CliProcess } from './cli.js';

/**
 * `count` `serve` processes (one HTTP process each, rate limits off) on one real redis-server and one
 * PostgreSQL, started for the calling test file and stopped after it, with a pool on the record for
 * judging what was recorded. `server(i)` is the i-th process's base URL (modulo `count`). `env`: more
 * of their environment, asked for when they start (after the file's earlier beforeAll hooks).
 */
export function useServeProcesses(
  count: number,
  secret: string,
  env: () => Record<string, string> = () => ({}),
) {
  const state = { servers: [] as string[], processes: [] as CliProcess[] } as {
    redis: RedisServer;
    postgres: PostgresServer;
    db: pg.Pool;
    servers: string[];
    processes: CliProcess[];
  };
  beforeAll(async () => {
    [state.redis, state.postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
    state.db = new pg.Pool({ connectionString: state.postgres.url, max: 2 });
    state.db.on('error', () => undefined); // idle connections see the server shut down at the end
    const processEnv = {
      LOCKSTOCK_JWT_SECRET: secret,
      LOCKSTOCK_RATE_LIMIT_PER_IP: '0',
      LOCKSTOCK_RATE_LIMIT_PER_USER: '0',
      LOCKSTOCK_PROCESSES: '1',
      ...env(),
    };
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      const urls = ['--redis', state.redis.url, '--database', state.postgres.url];
      state.processes.push(spawnCli(['serve', '--port', String(port), ...urls], processEnv));
      state.servers.push(`http://127.0.0.1:${port}`);
      await waitUntilHealthy(`${state.servers[i]}/healthz`); // one at a time: they migrate the same database
    }
  }, 120_000);
  afterAll(async () => {
    for (const p of state.processes) p.kill('SIGTERM');
    await Promise.all(state.processes.map((p) => p.exited));
    await state.db?.end();
    await Promise.all([state.redis?.stop(), state.postgres?.stop()]);
  });
  return {
    get redisUrl() {
      return state.redis.url;
    },
    get db() {
      return state.db;
    },
    /** The record's server: stop and restart it for a database outage. */
    get postgres(): PostgresServer {
      return state.postgres;
    },
    get processes(): readonly CliProcess[] {
      return state.processes;
    },
    get servers(): readonly string[] {
      return state.servers;
    },
    server: (i: number) => state.servers[i % count] as string,
  };
}
