import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer } from '@lockstock/servers';
import { PostgresLockClient, type PostgresLockClientOptions } from '../../src/postgres/index.js';

/**
 * What the statements of an acquire and a release leave on their connection (issue 49's round trips
 * and server CPU): the owner label set back to the connection's own name on every unlock — from
 * pg_settings on the first, from the client after — and the statements prepared once per
 * connection in scope 'session' (none in scope 'transaction'), prepared again when someone else
 * deallocated them. Each client runs on a caller's pool of one connection, so that connection can be
 * looked at between holds.
 */
let server: PostgresServer;
const pools: pg.Pool[] = [];
const clients: PostgresLockClient[] = [];

beforeAll(async () => {
  server = await PostgresServer.start();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(pools.map((p) => p.end()));
  await server?.stop();
});

function onePool(applicationName: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: server.url, max: 1, application_name: applicationName });
  pool.on('error', () => undefined); // idle connections see the server stop at the end
  pools.push(pool);
  return pool;
}

function client(pool: pg.Pool, options: Partial<PostgresLockClientOptions> = {}): PostgresLockClient {
  const made = new PostgresLockClient({ postgres: pool, ...options });
  made.on('connectionError', () => undefined);
  clients.push(made);
  return made;
}

let unique = 0;
const lockName = (label: string) => `pg-statements-${label}-${process.pid}-${++unique}`;

async function applicationName(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query<{ name: string }>("SELECT current_setting('application_name') AS name");
  return rows[0]!.name;
}

async function prepared(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    'SELECT name FROM pg_prepared_statements ORDER BY name',
  );
  return rows.map((r) => r.name);
}

describe('PostgreSQL statements of an acquire and a release', () => {
  it('every unlock gives the connection its own application_name back (the first reads it, the rest are given it)', async () => {
    const pool = onePool('floors-app');
    const locks = client(pool);
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const handle = await locks.mutex(lockName('label')).acquire();
      await handle.release();
      seen.push(await applicationName(pool));
    }
    expect(seen).toEqual(['floors-app', 'floors-app', 'floors-app']);
  });

  it("scope 'session' prepares its statements once per connection, and again after DEALLOCATE ALL", async () => {
    const pool = onePool('floors-prepared');
    const locks = client(pool);
    const name = lockName('prepared');
    const first = await locks.mutex(name).acquire();
    await first.release();
    expect(await prepared(pool)).toEqual(['lockstock_try_lock', 'lockstock_unlock']);
    const second = await locks.mutex(name).acquire();
    await second.release();
    expect(await prepared(pool)).toEqual([
      'lockstock_try_lock',
      'lockstock_unlock',
      'lockstock_unlock_labelled',
    ]);
    // Someone else's DEALLOCATE ALL on the pooled connection: pg still believes them prepared.
    await pool.query('DEALLOCATE ALL');
    const third = await locks.mutex(name).acquire();
    await expect(third.release()).resolves.toBe('released');
    expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
    expect(await prepared(pool)).toEqual(['lockstock_try_lock', 'lockstock_unlock_labelled']);
  });

  it("scope 'transaction' prepares nothing (a transaction pooler lends the connection to others)", async () => {
    const pool = onePool('floors-transaction');
    const locks = client(pool, { scope: 'transaction' });
    const handle = await locks.mutex(lockName('transaction')).acquire();
    await handle.release();
    expect(await prepared(pool)).toEqual([]);
  });
});
