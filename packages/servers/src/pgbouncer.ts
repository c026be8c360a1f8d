import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissingBinaryError, ServerStartError } from './errors.js';
import { installDebianPackages, whichExecutable } from './packages.js';
import { freePort } from './ports.js';
import { postgresUser } from './postgres.js';
import { spawnLogged, terminate, waitUntilReady, type StartedProcess } from './process.js';

const DEBIAN_BINARY = '/usr/sbin/pgbouncer';
const INSTALL = 'sudo apt-get update && sudo apt-get install -y --no-install-recommends pgbouncer';

/**
 * Finds a `pgbouncer` binary: `LOCKSTOCK_PGBOUNCER`, then PATH, then Debian's /usr/sbin/pgbouncer. As
 * root it installs Debian's `pgbouncer` when none is found (no service is started: it runs as our child
 * only); otherwise it throws MissingBinaryError with the command to run.
 */
export function findPgBouncer(): string {
  const override = process.env.LOCKSTOCK_PGBOUNCER;
  if (override) return override;
  const found = () => whichExecutable('pgbouncer') ?? (existsSync(DEBIAN_BINARY) ? DEBIAN_BINARY : undefined);
  const before = found();
  if (before) return before;
  installDebianPackages('pgbouncer', ['pgbouncer']);
  const after = found();
  if (!after) throw new MissingBinaryError('pgbouncer', INSTALL);
  return after;
}

export interface PgBouncerServerOptions {
  /** The PostgreSQL every database name is forwarded to. */
  target: { readonly host: string; readonly port: number };
  /** @default 'transaction' */
  poolMode?: 'session' | 'transaction' | 'statement';
  /** Server connections per database and user. @default 2 */
  defaultPoolSize?: number;
  /** How long to wait for the listening socket, ms. @default 30000 */
  timeoutMs?: number;
}

/**
 * A real pgbouncer on loopback in front of a PostgreSQL, for tests of what a pooler does to sessions.
 * Trust authentication as `postgres`, every database name forwarded to `target`; config, user list
 * and log in a temp dir. No Unix socket: pgbouncer's default would be /tmp/.s.PGSQL.<port>, outside
 * the temp dir and shared by parallel runs. pgbouncer refuses to run as root: as root it runs as the
 * `postgres` system user (spawned with that uid, so the PID is pgbouncer's own).
 */
export class PgBouncerServer {
  readonly host = '127.0.0.1';
  readonly user = 'postgres';
  readonly database = 'postgres';

  private constructor(
    readonly port: number,
    readonly dir: string,
    readonly poolMode: NonNullable<PgBouncerServerOptions['poolMode']>,
    private readonly started: StartedProcess,
  ) {}

  /** A connection string through the pooler (to the `postgres` database). */
  get url(): string {
    return `postgres://${this.user}@${this.host}:${this.port}/${this.database}`;
  }

  get pid(): number | undefined {
    return this.started.child.pid;
  }

  static async start(options: PgBouncerServerOptions): Promise<PgBouncerServer> {
    const binary = findPgBouncer();
    const poolMode = options.poolMode ?? 'transaction';
    const user = postgresUser();
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-pgbouncer-'));
    const asUser = user ? { uid: user.uid, gid: user.gid } : {};
    const userlist = join(dir, 'userlist.txt');
    writeFileSync(userlist, '"postgres" ""\n');
    if (user) {
      chownSync(dir, user.uid, user.gid);
      chownSync(userlist, user.uid, user.gid);
    }
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const config = join(dir, 'pgbouncer.ini');
      writeFileSync(config, iniText(options, poolMode, port, userlist));
      if (user) chownSync(config, user.uid, user.gid);
      const logFile = join(dir, 'pgbouncer.log');
      const started = spawnLogged(binary, [config], { logFile, cwd: dir, ...asUser });
      try {
        // pgbouncer logs "listening on 127.0.0.1:<port>" once its socket accepts connections.
        await waitUntilReady(
          `pgbouncer on port ${port}`,
          [started],
          async () => started.logTail().includes(`listening on 127.0.0.1:${port}`),
          { timeoutMs: options.timeoutMs ?? 30_000, intervalMs: 20 },
        );
        return new PgBouncerServer(port, dir, poolMode, started);
      } catch (error) {
        await terminate(started, 'SIGKILL');
        const portTaken = error instanceof ServerStartError && /address already in use/i.test(error.logTail);
        if (!portTaken || attempt >= 5) {
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
      }
    }
  }

  /**
   * SIGTERM: pgbouncer's immediate shutdown (its SIGINT waits for clients to leave), then removal of
   * the temp dir.
   */
  async stop(): Promise<void> {
    await terminate(this.started, 'SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

function iniText(options: PgBouncerServerOptions, poolMode: string, port: number, userlist: string): string {
  const { host, port: targetPort } = options.target;
  return [
    '[databases]',
    `* = host=${host} port=${targetPort}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${userlist}`,
    'admin_users = postgres',
    `pool_mode = ${poolMode}`,
    `default_pool_size = ${options.defaultPoolSize ?? 2}`,
    'max_client_conn = 200',
    // node-pg and psql may send it; pgbouncer refuses unknown startup parameters otherwise.
    'ignore_startup_parameters = extra_float_digits',
    '',
  ].join('\n');
}
