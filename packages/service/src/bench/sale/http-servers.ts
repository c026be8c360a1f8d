/**
 * The servers `bench sale` measures over HTTP, each in its own process as users run them: the
 * `lockstock serve` CLI (this build's, or another build's with `--before`), the minimal hand-written
 * endpoint and a hello-world Fastify route; and what one wrk run of them says.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@lockstock/servers';
import { signToken } from '../../http/auth.js';
import type { WrkResult } from './wrk.js';

export const cliPath = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const helloPath = fileURLToPath(new URL('./http-server.js', import.meta.url));
const minimalPath = fileURLToPath(new URL('./minimal-server.js', import.meta.url));
export const SECRET = 'bench-secret-0123456789abcdef';

/** One measured scenario: responses per second with the expected status, and latency (all responses). */
export interface HttpSample {
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses with another status (e.g. 5xx, or 409 limit_reached if the buyers ran out). */
  unexpected: number;
  /**
   * CPU per answered request, µs: the server's process (all its threads, and its children: the
   * embedded default's own redis-server) and the bench's Redis (INFO cpu). Steadier than the rate on a loaded
   * machine: a request costs what it costs, however long it waits for a core.
   */
  cpuUs?: { server: number; redis: number };
}

/** The CPU time a process has used (all threads), µs; undefined where /proc cannot say. */
export function processCpuUs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces): state is field 3; utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/**
 * The CPU time of a process and of its children (the embedded default's own redis-server), µs;
 * undefined where /proc cannot say.
 */
export function processTreeCpuUs(pid: number | undefined): number | undefined {
  const own = processCpuUs(pid);
  if (own === undefined) return undefined;
  // Its children: the processes whose parent it is (/proc/<pid>/task/<tid>/children is not in every
  // kernel; the parent field of /proc/<pid>/stat is).
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((child) => {
      try {
        const stat = readFileSync(`/proc/${child}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false; // gone meanwhile
      }
    });
  return children.reduce((sum, child) => sum + (processCpuUs(child) ?? 0), own);
}

/** Linux's USER_HZ (getconf CLK_TCK): 100 on every architecture Node runs on. */
const CLOCK_TICKS = 100;

export type LockstockMode = 'serve' | 'serve-limited' | 'embedded' | 'embedded-memory' | 'serve-processes';

export interface Server {
  url: string;
  /** The server's process (its CPU counters are read around each measurement). */
  pid?: number | undefined;
  stop(): Promise<void>;
}

async function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
}

/** Starts a process and waits until `probeUrl` answers 200 (or the process dies). */
async function startProcess(args: string[], env: NodeJS.ProcessEnv, probeUrl: string, cleanup = () => {}) {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  for (;;) {
    if (child.exitCode !== null) {
      cleanup();
      throw new Error(`benchmark server exited with ${child.exitCode}: ${stderr}`);
    }
    const up = await fetch(probeUrl).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    pid: child.pid,
    stop: async () => {
      child.kill('SIGTERM');
      await waitForExit(child);
      cleanup();
    },
  };
}

/** The `lockstock serve` CLI as a user runs it (rate limits off: one load generator address). */
export async function startLockstock(
  mode: LockstockMode,
  redisUrl: string,
  databaseUrl: string,
  processes = 1,
  nodeArgs: string[] = [],
  otlpEndpoint = '',
  /** Another build's CLI (`bench sale --before`) and environment on top of the bench's (a sampler). */
  extra: { cli?: string; env?: Record<string, string> } = {},
) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'lockstock-bench-'));
  const args = [
    // One HTTP process unless the row is about more: the comparisons are process against process.
    ...['--processes', String(mode === 'serve-processes' ? processes : 1)],
    ...(mode === 'serve' || mode === 'serve-limited' || mode === 'serve-processes'
      ? ['--workers', '0', '--redis', redisUrl, '--database', databaseUrl]
      : ['--data-dir', dataDir, '--durability', mode === 'embedded' ? 'fsync' : 'memory']),
  ];
  const env = {
    LOCKSTOCK_JWT_SECRET: SECRET,
    // Limited: the shipped per-user limit (each buyer sends one request: none is refused) and a per-
    // address limit no load generator reaches, so the row shows what the limits cost, not refusals.
    // Off: both 0 (one load generator's address would be refused at once by the shipped 50/s).
    LOCKSTOCK_RATE_LIMIT_PER_IP: mode === 'serve-limited' ? '1000000000' : '0',
    LOCKSTOCK_RATE_LIMIT_PER_USER: mode === 'serve-limited' ? '5' : '0',
    REDIS_URL: '',
    DATABASE_URL: '',
    // Tracing on only where the row asks for it, whatever the benchmark's own environment says.
    // (The traces endpoint, if set, wins over the general one: set both, or blank both.)
    OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpEndpoint && `${otlpEndpoint}/v1/traces`,
    OTEL_SERVICE_NAME: 'lockstock-bench',
    // The build's own default sampler unless the row names one.
    OTEL_TRACES_SAMPLER: '',
    OTEL_TRACES_SAMPLER_ARG: '',
    ...extra.env,
  };
  const server = await startProcess(
    [...nodeArgs, extra.cli ?? cliPath, 'serve', '--port', String(port), ...args],
    env,
    `${url}/healthz`,
    () => rmSync(dataDir, { recursive: true, force: true }),
  );
  return { url, pid: server.pid, stop: server.stop } satisfies Server;
}

/** The minimal hand-written endpoint, seeding a sale with stock and a sold-out one on `redisUrl`. */
export async function startMinimal(
  redisUrl: string,
  nodeArgs: string[] = [],
): Promise<Server & { open: string; gone: string }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const run = `minimal${Date.now().toString(36)}`;
  const [open, gone] = [`${run}open`, `${run}gone`];
  const server = await startProcess(
    [...nodeArgs, minimalPath, String(port), redisUrl, SECRET, open, gone],
    {},
    `${url}/ready`,
  );
  return { url, pid: server.pid, open, gone, stop: server.stop };
}

export async function startHello(): Promise<Server> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = await startProcess([helloPath, String(port)], {}, `${url}/ready`);
  return { url, pid: server.pid, stop: server.stop };
}

export async function createSale(url: string, stock: number): Promise<string> {
  const response = await fetch(`${url}/api/sales`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${signToken(SECRET, 'bench-admin', { admin: true })}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ name: 'bench', stock }),
  });
  if (response.status !== 201)
    throw new Error(`creating a sale: ${response.status} ${await response.text()}`);
  return String(((await response.json()) as { id: string }).id);
}

export function sample(result: WrkResult, expected: number): HttpSample {
  const total = Object.values(result.statuses).reduce((sum, n) => sum + n, 0);
  const good = result.statuses[String(expected)] ?? 0;
  return {
    perSec: (good * 1e6) / result.durationUs,
    p50Ms: result.latencyUs.p50 / 1000,
    p99Ms: result.latencyUs.p99 / 1000,
    unexpected: total - good,
  };
}
