import type { RowDataPacket } from 'mysql2/promise';
import type { ServerFinding } from '../locks/server-checks.js';
import type { Pool } from './driver.js';
import { SQL } from './sql.js';

interface Settings extends RowDataPacket {
  version: string;
  read_only: number | string;
  wait_timeout: number | string;
  flush_at_commit: number | string;
}

/**
 * The MySQL or MariaDB server behind a lock client, asked read-only: its kind and version, whether it
 * is read-only (a replica: a named lock there excludes only that server's sessions), a `wait_timeout`
 * that ends held sessions between the client's checks, and commits not flushed (fencing tokens drawn
 * again after a crash).
 */
export async function checkMySqlServer(control: Pool, sessionCheckMs: number): Promise<ServerFinding[]> {
  const [rows] = await control.query<Settings[]>(SQL.serverSettings);
  const settings = rows[0]!;
  const kind = /mariadb/i.test(settings.version) ? 'MariaDB' : 'MySQL';
  const findings: ServerFinding[] = [
    { check: 'server-version', severity: 'info', message: `${kind} ${settings.version}.` },
  ];
  if (Number(settings.read_only) === 1) {
    findings.push({
      check: 'replication',
      severity: 'danger',
      message: `read_only is on (a replica?): a named lock taken here excludes only sessions of this server, and fencing tokens cannot be drawn.`,
      fix: 'Point the lock client at the primary.',
    });
  }
  const waitMs = Number(settings.wait_timeout) * 1000;
  // A held session runs one statement every sessionCheckMs (0: never), so only a shorter timeout ends it.
  if (sessionCheckMs === 0 || waitMs <= sessionCheckMs) {
    findings.push({
      check: 'session-timeout',
      severity: 'warning',
      message: `wait_timeout is ${waitMs / 1000} s, ${sessionCheckMs === 0 ? 'and sessions are never checked' : `not longer than the session check (${sessionCheckMs} ms)`}: the server closes a held lock's idle session, and the lock with it.`,
      fix: 'Raise wait_timeout for the lock client (SET SESSION is made per connection: set it globally or for the user), or check sessions more often (sessionCheckMs).',
    });
  }
  if (Number(settings.flush_at_commit) !== 1) {
    findings.push({
      check: 'persistence',
      severity: 'warning',
      message: `innodb_flush_log_at_trx_commit is ${settings.flush_at_commit}: a crash may lose the last second of commits, fencing tokens handed out among them (drawn again).`,
      fix: 'Set innodb_flush_log_at_trx_commit = 1 (the default).',
    });
  }
  return findings;
}
