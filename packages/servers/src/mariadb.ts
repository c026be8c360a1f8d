import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissingBinaryError, ServerStartError } from './errors.js';
import { ManagedProcess } from './managed.js';
import { ManagedServer } from './managed-server.js';
import { installDebianPackages, isRoot, whichExecutable } from './packages.js';
import { freePort } from './ports.js';
import { spawnLogged, terminate, waitUntilReady, type StartedProcess } from './process.js';

const INSTALL = 'sudo apt-get update && sudo apt-get install -y --no-install-recommends mariadb-server';

export interface MariaDbInstallation {
  /** The server, `mariadbd` (Debian: /usr/sbin/mariadbd). */
  readonly server: string;
  /** `mariadb-install-db`, which creates a data directory. */
  readonly installDb: string;
}

function locate(name: string, debianPath: string): string | undefined {
  return whichExecutable(name) ?? (existsSync(debianPath) ? debianPath : undefined);
}

/**
 * Finds `mariadbd` and `mariadb-install-db` (`LOCKSTOCK_MARIADBD`, `LOCKSTOCK_MARIADB_INSTALL_DB`, then
 * PATH, then Debian's paths). As root it installs Debian's `mariadb-server` when they are missing (no
 * service is started: the server runs as our child only); otherwise it throws MissingBinaryError.
 */
export function findMariaDb(): MariaDbInstallation {
  const found = () => {
    const server = process.env.LOCKSTOCK_MARIADBD ?? locate('mariadbd', '/usr/sbin/mariadbd');
    const installDb =
      process.env.LOCKSTOCK_MARIADB_INSTALL_DB ?? locate('mariadb-install-db', '/usr/bin/mariadb-install-db');
    return server && installDb ? { server, installDb } : undefined;
  };
  const before = found();
  if (before) return before;
  installDebianPackages('mariadbd', ['mariadb-server']);
  const after = found();
  if (!after) throw new MissingBinaryError('mariadbd', INSTALL);
  return after;
}

/**
 * A freshly installed data directory, copied for every server (a copy takes ~0.02 s,
 * `mariadb-install-db` ~2 s). It is shared by every process of this user and this mariadbd build
 * (`<tmpdir>/lockstock-mariadb-template-<uid>-<build>`) and only ever read after it is complete:
 * each installer works in its own directory and renames it into place; a loser of that race drops
 * its own. One 26 MB directory, never a growing pile (a per-process copy leaked whenever a test
 * worker was killed before its exit hook ran).
 */
function templateDataDir(server: string, installDb: string): string {
  const build = statSync(server);
  const name = `lockstock-mariadb-template-${process.getuid?.() ?? 'user'}-${build.size}-${Math.floor(build.mtimeMs)}`;
  const template = join(tmpdir(), name);
  if (existsSync(join(template, 'data', 'mysql'))) return join(template, 'data');
  const dir = mkdtempSync(join(tmpdir(), `${name}.partial-`));
  try {
    execFileSync(
      installDb,
      [
        '--no-defaults', // must come first: otherwise /etc/mysql/my.cnf points at system paths
        `--datadir=${join(dir, 'data')}`,
        ...(isRoot() ? ['--user=root'] : []),
        '--auth-root-authentication-method=normal', // root without a password over TCP
        '--skip-test-db',
        '--skip-name-resolve',
        '--innodb-log-file-size=8M', // 26 MB instead of 114 MB
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir },
    );
    renameSync(dir, template);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    // Another process renamed its complete template into place first: use that one.
    if (existsSync(join(template, 'data', 'mysql'))) return join(template, 'data');
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    const output = `${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}`;
    throw new ServerStartError('mariadb-install-db', (error as Error).message.split('\n')[0] ?? '', output);
  }
  return join(template, 'data');
}

/**
 * True once the port answers with MySQL's initial handshake (protocol version 10): the server is
 * accepting clients, not just bound. No client library: the greeting is the server's first packet.
 */
export function mysqlGreets(port: number, host = '127.0.0.1', timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('data', (packet) => done(packet.length > 4 && packet[4] === 10));
  });
}

export interface MariaDbServerOptions {
  /** Extra server options, passed as `--name=value`. */
  settings?: Record<string, string | number>;
  /** How long to wait for the handshake, ms. @default 30000 */
  timeoutMs?: number;
}

/**
 * A throwaway MariaDB on loopback, for tests, the lab and benchmarks: its data dir (a copy of a
 * shared template), socket, pid file, temp files (`--tmpdir`) and log (`mariadbd.log`) in a temp
 * dir; user `root` without a password; a database `lockstock` (created by an init file on every
 * start). Durability is traded for speed (no binlog; the redo log is synced about once a second, so a
 * kill() loses nothing committed but a machine crash may): never point anything you care about at it.
 * Ready when the port sends MySQL's handshake.
 */
export class MariaDbServer extends ManagedServer {
  readonly host = '127.0.0.1';
  readonly user = 'root';
  readonly database = 'lockstock';

  private constructor(
    readonly port: number,
    readonly dir: string,
    managed: ManagedProcess,
  ) {
    super(managed, dir);
  }

  /** `mysql://root@127.0.0.1:<port>/lockstock` (mysql2 takes it as `uri`). */
  get url(): string {
    return `mysql://${this.user}@${this.host}:${this.port}/${this.database}`;
  }

  /** What mysql2's `createConnection` / `createPool` take. */
  get connectionOptions(): { host: string; port: number; user: string; database: string } {
    return { host: this.host, port: this.port, user: this.user, database: this.database };
  }

  get logFile(): string {
    return join(this.dir, 'mariadbd.log');
  }

  static async start(options: MariaDbServerOptions = {}): Promise<MariaDbServer> {
    const { server, installDb } = findMariaDb();
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-mariadb-'));
    try {
      cpSync(templateDataDir(server, installDb), join(dir, 'data'), { recursive: true });
      const initFile = join(dir, 'init.sql');
      writeFileSync(initFile, 'CREATE DATABASE IF NOT EXISTS lockstock;\n');
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const launch = launcher(
          server,
          serverArgs(dir, port, initFile, options.settings),
          dir,
          port,
          options,
        );
        try {
          return new MariaDbServer(port, dir, await ManagedProcess.start(launch));
        } catch (error) {
          const portTaken =
            error instanceof ServerStartError && /address already in use/i.test(error.logTail);
          if (!portTaken || attempt >= 5) throw error;
        }
      }
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }
}

function serverArgs(dir: string, port: number, initFile: string, settings: MariaDbServerOptions['settings']) {
  return [
    '--no-defaults', // must come first: otherwise /etc/mysql/my.cnf points at system paths
    `--datadir=${join(dir, 'data')}`,
    // mariadbd refuses to run as root unless told to.
    ...(isRoot() ? ['--user=root'] : []),
    '--bind-address=127.0.0.1',
    `--port=${port}`,
    `--socket=${join(dir, 'mysqld.sock')}`,
    `--pid-file=${join(dir, 'mysqld.pid')}`,
    // Its (already unlinked) temp files would go to /tmp otherwise.
    `--tmpdir=${dir}`,
    `--init-file=${initFile}`,
    '--skip-name-resolve',
    '--skip-log-bin',
    '--innodb-buffer-pool-size=32M',
    '--innodb-log-file-size=8M',
    // Committed writes reach the OS at once (they survive kill()), flushed to disk about once a second.
    '--innodb-flush-log-at-trx-commit=2',
    '--performance-schema=OFF',
    '--max-connections=500',
    ...Object.entries(settings ?? {}).map(([name, value]) => `--${name}=${value}`),
  ];
}

/** Spawns mariadbd (log on stderr, i.e. the log file) and resolves once it greets; kills it if not. */
function launcher(server: string, args: string[], dir: string, port: number, options: MariaDbServerOptions) {
  return async (): Promise<StartedProcess> => {
    const started = spawnLogged(server, args, { logFile: join(dir, 'mariadbd.log'), cwd: dir });
    try {
      await waitUntilReady(`mariadbd on port ${port}`, [started], () => mysqlGreets(port), {
        timeoutMs: options.timeoutMs ?? 30_000,
        intervalMs: 50,
      });
      return started;
    } catch (error) {
      await terminate(started, 'SIGKILL');
      throw error;
    }
  };
}
