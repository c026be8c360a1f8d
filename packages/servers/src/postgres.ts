import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissingBinaryError, ServerStartError } from './errors.js';
import { debianPostgresBinDir, installDebianPackages, isRoot, whichExecutable } from './packages.js';
import { freePort } from './ports.js';
import { spawnServer, stopProcess, type StartedProcess } from './process.js';

const INSTALL = 'sudo apt-get update && sudo apt-get install -y postgresql';

/** Directory holding `initdb` and `postgres`; installs Debian's postgresql as root when missing. */
export function findPostgresBinDir(): string {
  const fromEnv = process.env.LOCKSTOCK_PG_BIN;
  if (fromEnv) return fromEnv;
  const debian = debianPostgresBinDir();
  if (debian) return debian;
  const initdb = whichExecutable('initdb');
  if (initdb && whichExecutable('postgres')) return join(initdb, '..');
  installDebianPackages('postgres', ['postgresql']);
  const installed = debianPostgresBinDir();
  if (!installed) throw new MissingBinaryError('postgres', INSTALL);
  return installed;
}

export interface UserIds {
  uid: number;
  gid: number;
}

/**
 * PostgreSQL (and pgbouncer) refuse to run as root: as root we run them as the `postgres` system user.
 */
export function postgresUser(): UserIds | undefined {
  if (!isRoot()) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) {
    throw new MissingBinaryError('postgres', INSTALL, 'the postgres system user does not exist');
  }
  return { uid: Number(uid), gid: Number(gid) };
}

export interface PostgresServerOptions {
  /** Extra `-c name=value` settings. */
  settings?: Record<string, string | number>;
}

/**
 * A throwaway PostgreSQL cluster on loopback, for tests, the lab and benchmarks. Durability is traded
 * for speed (fsync off): never point anything you care about at it.
 */
export class PostgresServer {
  private constructor(
    readonly port: number,
    readonly dir: string,
    private started: StartedProcess,
    private readonly launch: () => Promise<StartedProcess>,
  ) {}

  readonly host = '127.0.0.1';
  readonly user = 'postgres';
  readonly database = 'postgres';

  get url(): string {
    return `postgres://${this.user}@${this.host}:${this.port}/${this.database}`;
  }

  static async start(options: PostgresServerOptions = {}): Promise<PostgresServer> {
    const bin = findPostgresBinDir();
    const user = postgresUser();
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-pg-'));
    if (user) chownSync(dir, user.uid, user.gid);
    const data = join(dir, 'data');
    const asUser = user ? { uid: user.uid, gid: user.gid } : {};
    const env = { ...process.env, LC_ALL: 'C', HOME: dir };
    try {
      execFileSync(
        join(bin, 'initdb'),
        ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
        { ...asUser, env, stdio: ['ignore', 'ignore', 'pipe'], cwd: dir },
      );
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
      throw new ServerStartError('initdb', (error as Error).message.split('\n')[0] ?? '', stderr);
    }
    const settings: Record<string, string | number> = {
      listen_addresses: '127.0.0.1',
      unix_socket_directories: dir,
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      max_connections: 300,
      shared_buffers: '128MB',
      ...options.settings,
    };
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const args = ['-D', data, '-p', String(port)];
      for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
      const launch = () =>
        spawnServer(
          `postgres on port ${port}`,
          join(bin, 'postgres'),
          args,
          /database system is ready to accept connections/,
          { ...asUser, env, cwd: dir },
        );
      try {
        return new PostgresServer(port, dir, await launch(), launch);
      } catch (error) {
        const portTaken =
          error instanceof ServerStartError && /could not (bind|create listen)/i.test(error.logTail);
        if (!portTaken || attempt >= 5) {
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
      }
    }
  }

  get pid(): number | undefined {
    return this.started.child.pid;
  }

  get running(): boolean {
    const { child } = this.started;
    return child.exitCode === null && child.signalCode === null;
  }

  /**
   * `pg_ctl stop -m immediate`: the postmaster and every backend quit at once, without a checkpoint —
   * a crash, as clients see it (their connections drop; new ones are refused). The data directory
   * stays; restart() recovers it on the same port.
   */
  async stopImmediately(): Promise<void> {
    if (!this.running) return;
    const user = postgresUser();
    execFileSync(
      join(findPostgresBinDir(), 'pg_ctl'),
      ['stop', '-D', join(this.dir, 'data'), '-m', 'immediate', '-w', '-t', '30'],
      {
        ...(user ? { uid: user.uid, gid: user.gid } : {}),
        stdio: ['ignore', 'ignore', 'pipe'],
        cwd: this.dir,
      },
    );
    await this.started.exited;
  }

  /** Starts the server again on the same port and data (after stopImmediately() or a crash). */
  async restart(): Promise<void> {
    if (this.running) await stopProcess(this.started, 'SIGINT');
    this.started = await this.launch();
  }

  /** Fast shutdown (SIGINT: abort open transactions) and removal of the cluster directory. */
  async stop(): Promise<void> {
    await stopProcess(this.started, 'SIGINT');
    if (existsSync(this.dir)) rmSync(this.dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
