import type { ServerFinding } from '../locks/server-checks.js';
import { pg, type Pool } from './driver.js';
import { SQL } from './sql.js';

interface Settings {
  version_num: number;
  version: string;
  in_recovery: boolean;
  synchronous_commit: string;
  fsync: string;
  idle_session_timeout: string | null;
  idle_in_transaction_session_timeout: string;
  pid: number;
}

/** PostgreSQL releases no longer get fixes before this (server_version_num). */
const OLDEST_SUPPORTED = 130_000;

/**
 * The PostgreSQL server behind a lock client's pool, asked read-only: its version, whether it is a
 * standby (an advisory lock taken there excludes only that standby's sessions), timeouts that end a held
 * session between the client's checks of it, `synchronous_commit = off` (a
 * crash may hand out fencing tokens again), and what sits between (a transaction-mode pooler breaks
 * session locks: `scope: 'session'` refuses it at its first lock, the report says so up front).
 */
export async function checkPostgresServer(
  pool: Pool,
  scope: 'session' | 'transaction',
  sessionCheckMs: number,
): Promise<ServerFinding[]> {
  const client = await pool.connect();
  let settings: Settings;
  let announced: number | null;
  try {
    settings = (await client.query<Settings>(SQL.serverSettings)).rows[0]!;
    announced = (client as unknown as { processID: number | null }).processID;
  } finally {
    client.release();
  }
  const findings: ServerFinding[] = [
    { check: 'server-version', severity: 'info', message: `PostgreSQL ${settings.version}.` },
  ];
  if (settings.version_num < OLDEST_SUPPORTED) {
    findings.push({
      check: 'server-version',
      severity: 'warning',
      message: `PostgreSQL ${settings.version} no longer gets fixes from the PostgreSQL project.`,
      fix: 'Upgrade to a supported release (13 or later).',
    });
  }
  if (settings.in_recovery) {
    findings.push({
      check: 'replication',
      severity: 'danger',
      message:
        'this server is a standby: an advisory lock taken here excludes only sessions of this standby, not of the primary or the other standbys.',
      fix: 'Point the lock client at the primary.',
    });
  }
  for (const [setting, value] of [
    ['idle_session_timeout', settings.idle_session_timeout],
    ['idle_in_transaction_session_timeout', settings.idle_in_transaction_session_timeout],
  ] as const) {
    const ms = Number(value ?? 0);
    // A held session runs one statement every sessionCheckMs (0: never), so only a shorter timeout ends it.
    const reached = ms > 0 && (sessionCheckMs === 0 || ms <= sessionCheckMs);
    if (reached && (scope === 'session' || setting.includes('transaction'))) {
      findings.push({
        check: 'session-timeout',
        severity: 'warning',
        message: `${setting} is ${ms} ms, ${sessionCheckMs === 0 ? 'and sessions are never checked' : `not longer than the session check (${sessionCheckMs} ms)`}: the server ends a held lock's idle session, and the lock with it (its signal aborts, reason 'session_lost').`,
        fix: `Set ${setting} = 0 for the role the lock client connects as (ALTER ROLE ... SET ${setting} = 0).`,
      });
    }
  }
  if (settings.fsync === 'off') {
    findings.push({
      check: 'persistence',
      severity: 'warning',
      message:
        'fsync is off: a crash of the server (or its host) may lose or corrupt what was committed, fencing tokens handed out included.',
      fix: 'Set fsync = on (the default).',
    });
  }
  if (settings.synchronous_commit === 'off') {
    findings.push({
      check: 'persistence',
      severity: 'warning',
      message:
        'synchronous_commit is off: a crash may lose the last fencing tokens handed out, and the sequence hands them out again.',
      fix: "Set synchronous_commit = on (the default) for the lock client's role.",
    });
  }
  if (announced !== settings.pid) findings.push(await poolerFinding(pool, scope));
  return findings;
}

/**
 * A pooler answers (the connection announced another process than the one that serves it): a second
 * client opens a transaction and says which server process it was lent, then the first asks again.
 * A session pooler lends another process and keeps the first; a transaction pooler lends the same one
 * or moves the first (see checkPooler, which refuses it at a session lock's first use).
 */
async function poolerFinding(pool: Pool, scope: 'session' | 'transaction'): Promise<ServerFinding> {
  const held = await pool.connect();
  const other = new (pg().Client)(pool.options);
  other.on('error', () => undefined); // a dropped probe connection fails its own query
  let transactionMode: boolean;
  try {
    await other.connect();
    const pidOf = async (client: { query: Pool['query'] }) =>
      Number((await client.query<{ pid: number }>(SQL.backendPid)).rows[0]?.pid);
    // The order matters: a transaction pooler lends `other` the server connection `held` just gave back.
    const mine = await pidOf(held);
    const began = await other.query('BEGIN').then(
      () => true,
      () => false, // statement mode refuses transaction blocks
    );
    const lent = began ? await pidOf(other) : mine;
    const again = await pidOf(held);
    transactionMode = !began || lent === mine || again !== mine;
  } finally {
    held.release();
    await other.end().catch(() => undefined);
  }
  if (!transactionMode) {
    return {
      check: 'pooler',
      severity: 'info',
      message: 'connections go through a pooler that keeps one server session per client (session mode).',
    };
  }
  return scope === 'session'
    ? {
        check: 'pooler',
        severity: 'danger',
        message:
          'connections go through a transaction- or statement-mode pooler: a session advisory lock stays on a server connection other clients are lent (the first session lock is refused with TransactionPoolerError).',
        fix: "Connect the lock client to PostgreSQL directly or through a session-mode pool, or use scope: 'transaction'.",
      }
    : {
        check: 'pooler',
        severity: 'info',
        message: "connections go through a transaction-mode pooler: fine for scope 'transaction' locks.",
      };
}
