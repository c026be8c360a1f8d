import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgBouncerServer, PostgresServer } from '@lockstock/servers';
import { UnsafeServerError, type ServerFinding } from '../../src/index.js';
import { PostgresLockClient, type PostgresLockClientOptions } from '../../src/postgres/index.js';

/*
 * The checks of the PostgreSQL server behind a lock client, against a real server and real pgbouncers
 * in transaction and session mode: a transaction pooler is a danger for session locks (strict clients
 * refuse before the pooler check would), idle-session timeouts and synchronous_commit = off warnings.
 */
const checks = (findings: readonly ServerFinding[], severity: ServerFinding['severity']) =>
  findings.filter((finding) => finding.severity === severity).map((finding) => finding.check);

let server: PostgresServer;
let transactionPooler: PgBouncerServer;
let sessionPooler: PgBouncerServer;
const clients: PostgresLockClient[] = [];
const pools: pg.Pool[] = [];

beforeAll(async () => {
  // Durable, as a production server is (the test servers' default is fsync = off, for speed).
  server = await PostgresServer.start({ settings: { fsync: 'on', synchronous_commit: 'on' } });
  [transactionPooler, sessionPooler] = await Promise.all([
    PgBouncerServer.start({ target: server, poolMode: 'transaction', defaultPoolSize: 4 }),
    PgBouncerServer.start({ target: server, poolMode: 'session', defaultPoolSize: 8 }),
  ]);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(pools.map((p) => p.end()));
  await Promise.all([transactionPooler?.stop(), sessionPooler?.stop()]);
  await server?.stop();
});

function client(options: Partial<PostgresLockClientOptions> = {}): PostgresLockClient {
  const made = new PostgresLockClient({ postgres: server.url, maxConnections: 4, ...options });
  made.on('connectionError', () => undefined);
  clients.push(made);
  return made;
}

describe('PostgreSQL server checks', () => {
  it('a direct connection to a primary: its version, nothing to warn of', async () => {
    const report = await client().checkServer();
    expect(report.backend).toBe('postgres');
    expect(report.findings.find((f) => f.check === 'server-version')?.message).toMatch(/^PostgreSQL \d+/);
    expect(checks(report.findings, 'warning')).toEqual([]);
    expect(checks(report.findings, 'danger')).toEqual([]);
  });

  it('a server timeout that ends held sessions between checks, and synchronous_commit = off, are warnings', async () => {
    const pool = new pg.Pool({
      connectionString: server.url,
      max: 2,
      options: '-c idle_session_timeout=3000 -c synchronous_commit=off',
    });
    pools.push(pool);
    const report = await client({ postgres: pool }).checkServer();
    expect(checks(report.findings, 'warning').sort()).toEqual(['persistence', 'session-timeout']);
    expect(report.findings.find((f) => f.check === 'session-timeout')?.message).toMatch(
      /idle_session_timeout is 3000 ms, not longer than the session check \(5000 ms\)/,
    );
    // Checked every second, a held session never idles for 3 s: no warning.
    const checked = await client({ postgres: pool, sessionCheckMs: 1_000 }).checkServer();
    expect(checks(checked.findings, 'warning')).toEqual(['persistence']);
  });

  it('a transaction-mode pooler is a danger for session locks: strict refuses, and locks nothing', async () => {
    const report = await client({ postgres: transactionPooler.url }).checkServer();
    expect(checks(report.findings, 'danger')).toEqual(['pooler']);
    const refused = await client({ postgres: transactionPooler.url, serverChecks: 'strict' })
      .mutex('strict-pooled')
      .acquire()
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UnsafeServerError);
    expect((refused as Error).message).toMatch(/transaction- or statement-mode pooler/);
    const admin = new pg.Client(server.url);
    await admin.connect();
    const { rows } = await admin
      .query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'")
      .finally(() => admin.end());
    expect(rows[0]?.n).toBe(0);
    // The same pooler is fine for transaction-scoped locks: reported, not a danger.
    const transactional = await client({
      postgres: transactionPooler.url,
      scope: 'transaction',
    }).checkServer();
    expect(checks(transactional.findings, 'danger')).toEqual([]);
    expect(checks(transactional.findings, 'info')).toContain('pooler');
  });

  it('a session-mode pooler is reported, not warned of', async () => {
    const report = await client({ postgres: sessionPooler.url }).checkServer();
    expect(checks(report.findings, 'info')).toContain('pooler');
    expect(checks(report.findings, 'danger')).toEqual([]);
    expect(checks(report.findings, 'warning')).toEqual([]);
  });
});
