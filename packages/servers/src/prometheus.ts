import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissingBinaryError, ServerStartError } from './errors.js';
import { ManagedProcess } from './managed.js';
import { ManagedServer } from './managed-server.js';
import { installDebianPackages, whichExecutable } from './packages.js';
import { freePort } from './ports.js';
import { httpRequest } from './probes.js';
import { spawnLogged, terminate, waitUntilReady, type StartedProcess } from './process.js';

const INSTALL = 'sudo apt-get update && sudo apt-get install -y --no-install-recommends prometheus';

/** Finds `name` (prometheus or promtool): PATH, then /usr/bin; installs Debian's `prometheus` as root. */
function findTool(name: 'prometheus' | 'promtool', override: string | undefined): string {
  if (override) return override;
  const found = () =>
    whichExecutable(name) ?? (existsSync(`/usr/bin/${name}`) ? `/usr/bin/${name}` : undefined);
  const before = found();
  if (before) return before;
  installDebianPackages(name, ['prometheus']);
  const after = found();
  if (!after) throw new MissingBinaryError(name, INSTALL);
  return after;
}

/**
 * Finds a `prometheus` binary: `LOCKSTOCK_PROMETHEUS`, then PATH, then Debian's /usr/bin/prometheus.
 * As root it installs Debian's `prometheus` when none is found (its service is not started: it runs
 * as our child only); otherwise it throws MissingBinaryError with the command to run.
 */
export function findPrometheus(): string {
  return findTool('prometheus', process.env.LOCKSTOCK_PROMETHEUS);
}

/** Finds `promtool` (from the same Debian package): `LOCKSTOCK_PROMTOOL`, PATH, /usr/bin. */
export function findPromtool(): string {
  return findTool('promtool', process.env.LOCKSTOCK_PROMTOOL);
}

/** Runs promtool with `args`; resolves with its exit code and output (stdout and stderr together). */
export function promtool(
  args: string[],
  options: { cwd?: string } = {},
): Promise<{ code: number; output: string }> {
  const binary = findPromtool();
  return new Promise((resolve) => {
    execFile(binary, args, { cwd: options.cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

export interface PrometheusServerOptions {
  /**
   * The content of prometheus.yml. `rule_files` may name files given in `files` by their bare name
   * (relative paths are resolved against the config file's directory, the temp dir).
   */
  config: string;
  /** More files to write next to the config (rule files): name → content. */
  files?: Record<string, string>;
  /** Extra `prometheus` arguments (e.g. `['--web.enable-lifecycle']`). */
  args?: string[];
  /** How long to wait for `/-/ready`, ms. @default 30000 */
  timeoutMs?: number;
}

/** One series of an instant query's answer. */
export interface PrometheusSample {
  metric: Record<string, string>;
  value: [number, string];
}

/**
 * A real Prometheus on loopback: its config, rule files, TSDB and log (`prometheus.log`) in a temp
 * dir. Ready when `GET /-/ready` answers 200. The HTTP API is on `url` (`/api/v1/query`,
 * `/api/v1/targets`, `/api/v1/rules`, …); `query()` runs an instant query. A restart() comes back on
 * the same port with the same data.
 */
export class PrometheusServer extends ManagedServer {
  readonly host = '127.0.0.1';

  private constructor(
    readonly port: number,
    /** The temp dir: prometheus.yml, the files given, data/, prometheus.log. */
    readonly dir: string,
    managed: ManagedProcess,
  ) {
    super(managed, dir);
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  get configFile(): string {
    return join(this.dir, 'prometheus.yml');
  }

  get logFile(): string {
    return join(this.dir, 'prometheus.log');
  }

  static async start(options: PrometheusServerOptions): Promise<PrometheusServer> {
    const binary = findPrometheus();
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-prometheus-'));
    writeFileSync(join(dir, 'prometheus.yml'), options.config);
    for (const [name, content] of Object.entries(options.files ?? {}))
      writeFileSync(join(dir, name), content);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const args = [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        ...(options.args ?? []),
      ];
      const launch = launcher(binary, port, dir, args, options.timeoutMs ?? 30_000);
      try {
        return new PrometheusServer(port, dir, await ManagedProcess.start(launch));
      } catch (error) {
        const taken = error instanceof ServerStartError && /address already in use/i.test(error.logTail);
        if (!taken || attempt >= 5) {
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
      }
    }
  }

  /** GET `path` of the HTTP API (e.g. `/api/v1/targets`) and its `data`; throws unless `status` is success. */
  async api<T = unknown>(path: string): Promise<T> {
    const { status, body } = await httpRequest(`${this.url}${path}`, { timeoutMs: 10_000 });
    const answer = JSON.parse(body) as { status: string; data: T; error?: string };
    if (status !== 200 || answer.status !== 'success') {
      throw new Error(`Prometheus ${path}: ${status} ${answer.error ?? body.slice(0, 300)}`);
    }
    return answer.data;
  }

  /** An instant query (`/api/v1/query`); resolves with its vector (throws on an error or a non-vector). */
  async query(expr: string): Promise<PrometheusSample[]> {
    const data = await this.api<{ resultType: string; result: PrometheusSample[] }>(
      `/api/v1/query?query=${encodeURIComponent(expr)}`,
    );
    if (data.resultType !== 'vector') throw new Error(`${expr}: a ${data.resultType}, not a vector`);
    return data.result;
  }
}

/** Spawns Prometheus and resolves once `/-/ready` answers 200; kills it if it does not get there. */
function launcher(binary: string, port: number, dir: string, args: string[], timeoutMs: number) {
  return async (): Promise<StartedProcess> => {
    const started = spawnLogged(binary, args, { logFile: join(dir, 'prometheus.log'), cwd: dir });
    try {
      await waitUntilReady(
        `prometheus on port ${port}`,
        [started],
        async () =>
          (await httpRequest(`http://127.0.0.1:${port}/-/ready`, { timeoutMs: 1_000 })).status === 200,
        { timeoutMs },
      );
      return started;
    } catch (error) {
      await terminate(started, 'SIGKILL');
      throw error;
    }
  };
}
