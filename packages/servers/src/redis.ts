import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissingBinaryError, ServerStartError } from './errors.js';
import { freezeProcess } from './freeze.js';
import { installDebianPackages, linkAs, whichExecutable } from './packages.js';
import { freePort } from './ports.js';
import { spawnServer, stopProcess, type StartedProcess } from './process.js';

const REDIS_TOOLS_BINARY = '/usr/bin/redis-check-rdb';

/**
 * Finds a `redis-server` binary: `LOCKSTOCK_REDIS_SERVER`, then PATH, then Debian's `redis-tools`
 * (whose redis-check-rdb is the server binary, selected by argv[0]; we link it as redis-server so no
 * system service is installed or started). As root it installs redis-tools when nothing is found.
 */
export function findRedisServer(): string {
  const override = process.env.LOCKSTOCK_REDIS_SERVER;
  if (override) return override;
  const onPath = whichExecutable('redis-server');
  if (onPath) return onPath;
  if (!existsSync(REDIS_TOOLS_BINARY)) installDebianPackages('redis-server', ['redis-tools']);
  if (!existsSync(REDIS_TOOLS_BINARY)) {
    throw new MissingBinaryError(
      'redis-server',
      'sudo apt-get update && sudo apt-get install -y redis-tools',
    );
  }
  return linkAs(REDIS_TOOLS_BINARY, 'redis-server');
}

export interface RedisServerOptions {
  /** Extra `redis-server` arguments, e.g. `['--appendonly', 'yes']`. */
  args?: string[];
  /** Fixed port; by default a free loopback port is picked. */
  port?: number;
  /** Data directory; by default a fresh temp dir, removed on stop(). */
  dir?: string;
  /**
   * Run the server in a process group (and session) of its own, so the signals a terminal sends to
   * its foreground group — Ctrl-C's SIGINT — reach only the process that started it, which stops it
   * when it is done with it (the private redis-server of `lockstock serve`). As without it, the
   * server is killed when that process exits; if that process is SIGKILLed, the server keeps
   * running either way (a signal to one process does not reach its children).
   */
  ownProcessGroup?: boolean;
}

/** A real redis-server child process on loopback. */
export class RedisServer {
  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly ownsDir: boolean,
    private readonly args: string[],
    private started: StartedProcess | undefined,
    private readonly ownProcessGroup = false,
  ) {}

  readonly host = '127.0.0.1';

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.started?.child.pid;
  }

  get running(): boolean {
    const child = this.started?.child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const binary = findRedisServer();
    const ownsDir = options.dir === undefined;
    const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'lockstock-redis-'));
    const args = options.args ?? [];
    for (let attempt = 1; ; attempt++) {
      const port = options.port ?? (await freePort());
      try {
        const ownGroup = options.ownProcessGroup ?? false;
        const started = await launch(binary, port, dir, args, ownGroup);
        return new RedisServer(port, dir, ownsDir, args, started, ownGroup);
      } catch (error) {
        const portTaken = error instanceof ServerStartError && /Address already in use/i.test(error.logTail);
        if (!portTaken || options.port !== undefined || attempt >= 5) {
          if (ownsDir) rmSync(dir, { recursive: true, force: true });
          throw error;
        }
      }
    }
  }

  /**
   * Sends a signal to the server process (SIGKILL to crash it, SIGSTOP/SIGCONT to pause it). After
   * SIGSTOP it returns once the server is really stopped (see freezeProcess).
   */
  signal(signal: NodeJS.Signals): void {
    const pid = this.running ? this.pid : undefined;
    if (pid === undefined) return;
    if (signal === 'SIGSTOP') freezeProcess(pid);
    else this.started?.child.kill(signal);
  }

  /** Kills the process without saving anything and waits until it is gone. */
  async kill(): Promise<void> {
    if (this.started) await stopProcess(this.started, 'SIGKILL');
  }

  /** Starts the server again on the same port and data dir (after kill() or stop({ keepDir })). */
  async restart(): Promise<void> {
    if (this.running) await this.kill();
    this.started = await launch(findRedisServer(), this.port, this.dir, this.args, this.ownProcessGroup);
  }

  /** Shuts the server down and removes its temp dir (unless the caller supplied the dir). */
  async stop(): Promise<void> {
    if (this.started) await stopProcess(this.started, 'SIGTERM');
    this.started = undefined;
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

function launch(
  binary: string,
  port: number,
  dir: string,
  args: string[],
  ownProcessGroup = false,
): Promise<StartedProcess> {
  // Defaults for tests and the embedded server: loopback only, no persistence unless asked for,
  // DEBUG allowed from loopback so fault tests can use DEBUG SLEEP. Later args override earlier ones.
  const fullArgs = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--protected-mode', 'yes',
    '--save', '',
    '--appendonly', 'no',
    '--dir', dir,
    '--daemonize', 'no',
    '--logfile', '',
    '--enable-debug-command', 'local',
    ...args,
  ]; // prettier-ignore
  return spawnServer(`redis-server on port ${port}`, binary, fullArgs, /Ready to accept connections/, {
    cwd: dir,
    detached: ownProcessGroup,
  });
}

/** Starts `count` independent redis-servers (e.g. the 5 masters of a Redlock). */
export function startRedisServers(count: number, options: Omit<RedisServerOptions, 'port' | 'dir'> = {}) {
  return Promise.all(Array.from({ length: count }, () => RedisServer.start(options)));
}
