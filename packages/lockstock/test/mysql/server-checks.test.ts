import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MariaDbServer } from '@lockstock/servers';
import { UnsafeServerError, type ServerFinding } from '../../src/index.js';
import { MySqlLockClient, type MySqlLockClientOptions } from '../../src/mysql/index.js';

/*
 * The checks of the MySQL/MariaDB server behind a lock client, against a real MariaDB: durable by
 * default here (innodb_flush_log_at_trx_commit = 1), then read-only (a danger: strict refuses) and with
 * a wait_timeout shorter than the session check (a warning).
 */
const checks = (findings: readonly ServerFinding[], severity: ServerFinding['severity']) =>
  findings.filter((finding) => finding.severity === severity).map((finding) => finding.check);

let server: MariaDbServer;
let admin: mysql.Connection;
const clients: MySqlLockClient[] = [];

beforeAll(async () => {
  server = await MariaDbServer.start({ settings: { 'innodb-flush-log-at-trx-commit': 1 } });
  admin = await mysql.createConnection(server.url);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await admin?.end();
  await server?.stop();
});

function client(options: Partial<MySqlLockClientOptions> = {}): MySqlLockClient {
  const made = new MySqlLockClient({ mysql: server.url, ...options });
  made.on('connectionError', () => undefined);
  clients.push(made);
  return made;
}

describe('MySQL server checks', () => {
  it('a durable writable server: its kind and version, nothing to warn of', async () => {
    const report = await client().checkServer();
    expect(report.backend).toBe('mysql');
    expect(report.findings.find((f) => f.check === 'server-version')?.message).toMatch(/^MariaDB \d+/);
    expect(checks(report.findings, 'warning')).toEqual([]);
    expect(checks(report.findings, 'danger')).toEqual([]);
  });

  it('a wait_timeout the session check does not beat is a warning; commits not flushed too', async () => {
    await admin.query('SET GLOBAL wait_timeout = 3, GLOBAL innodb_flush_log_at_trx_commit = 2');
    try {
      const report = await client().checkServer();
      expect(checks(report.findings, 'warning').sort()).toEqual(['persistence', 'session-timeout']);
      const checked = await client({ sessionCheckMs: 1_000 }).checkServer();
      expect(checks(checked.findings, 'warning')).toEqual(['persistence']);
    } finally {
      await admin.query('SET GLOBAL wait_timeout = 28800, GLOBAL innodb_flush_log_at_trx_commit = 1');
    }
  });

  it('a read-only server is a danger: a strict client refuses', async () => {
    await admin.query('SET GLOBAL read_only = 1');
    try {
      const report = await client().checkServer();
      expect(checks(report.findings, 'danger')).toEqual(['replication']);
      const refused = await client({ serverChecks: 'strict' })
        .mutex('read-only')
        .acquire()
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(UnsafeServerError);
      expect((refused as Error).message).toMatch(/read_only is on/);
    } finally {
      await admin.query('SET GLOBAL read_only = 0');
    }
  });
});
