import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@lockstock/servers';
import { signToken } from '../../http/auth.js';
import { measureInTurn } from './order.js';
import { startOtlpSink, type OtlpReceipt } from './otlp-sink.js';
import { runWrk, type WrkResult } from './wrk.js';

const cliPath = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const helloPath = fileURLToPath(new URL('./http-server.js', import.meta.url));
const minimalPath = fileURLToPath(new URL('./minimal-server.js', import.meta.url));
const SECRET = 'bench-secret-0123456789abcdef';

/** The load: `connections` keep-alive connections from wrk's `threads`, for `durationSeconds`. */
export interface HttpLoad {
  connections: number;
  threads: number;
  durationSeconds: number;
}

/** One measured scenario: responses per second with the expected status, and latency (all responses). */
export interface HttpSample {
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses with another status (e.g. 5xx, or 409 limit_reached if the buyers ran out). */
  unexpected: number;
}

export interface HttpRun {
  hello: HttpSample;
  /** The minimal hand-written endpoint (minimal-server.ts) on the same Redis. */
  minimal: { purchases: HttpSample; soldOut: HttpSample };
  /** `serve --workers 0` with rate limits on (per user as shipped, per address too high to refuse). */
  serveLimited: { purchases: HttpSample; soldOut: HttpSample };
  /** `serve --workers 0` on the benchmark's Redis and PostgreSQL. */
  serve: { purchases: HttpSample; soldOut: HttpSample };
  /**
   * The same with OpenTelemetry tracing on (OTEL_EXPORTER_OTLP_ENDPOINT, the SDK's defaults
   * otherwise), exporting to a sink that keeps nothing (otlp-sink.ts); what reached it.
   */
  serveTraced: { purchases: HttpSample; soldOut: HttpSample; exported: OtlpReceipt };
  /** `serve` as `npm start` runs it: private redis-server, PGlite, the pipeline (off the HTTP loop). */
  embedded: { purchases: HttpSample; soldOut: HttpSample };
  /** The embedded default with `--durability memory` (appendfsync everysec): the cost of fsync. */
  embeddedMemory: { purchases: HttpSample; soldOut: HttpSample };
  /** `serve --workers 0 --processes N` (N HTTP processes on one port), when asked for. */
  serveProcesses?: { processes: number; purchases: HttpSample; soldOut: HttpSample };
}

type LockstockMode = 'serve' | 'serve-limited' | 'embedded' | 'embedded-memory' | 'serve-processes';

interface Server {
  url: string;
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
    LOCKSTOCK_RATE_LIMIT_PER_IP: mode === 'serve-limited' ? '1000000000' : '0',
    LOCKSTOCK_RATE_LIMIT_PER_USER: mode === 'serve-limited' ? '5' : '0',
    REDIS_URL: '',
    DATABASE_URL: '',
    // Tracing on only where the row asks for it, whatever the benchmark's own environment says.
    // (The traces endpoint, if set, wins over the general one: set both, or blank both.)
    OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpEndpoint && `${otlpEndpoint}/v1/traces`,
    OTEL_SERVICE_NAME: 'lockstock-bench',
  };
  const server = await startProcess(
    [...nodeArgs, cliPath, 'serve', '--port', String(port), ...args],
    env,
    `${url}/healthz`,
    () => rmSync(dataDir, { recursive: true, force: true }),
  );
  return { url, stop: server.stop } satisfies Server;
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
  return { url, open, gone, stop: server.stop };
}

async function startHello(): Promise<Server> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = await startProcess([helloPath, String(port)], {}, `${url}/ready`);
  return { url, stop: server.stop };
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

function sample(result: WrkResult, expected: number): HttpSample {
  const total = Object.values(result.statuses).reduce((sum, n) => sum + n, 0);
  const good = result.statuses[String(expected)] ?? 0;
  return {
    perSec: (good * 1e6) / result.durationUs,
    p50Ms: result.latencyUs.p50 / 1000,
    p99Ms: result.latencyUs.p99 / 1000,
    unexpected: total - good,
  };
}

/**
 * Distinct buyers: tokens signed up front, one a line. Each scenario of a server process takes its
 * own range, so no token is ever verified twice by one process (the token cache cannot help), and
 * every purchase is a new buyer's first.
 */
export class BuyerTokens {
  readonly file: string;
  private readonly dir: string;

  constructor(
    readonly perScenario: number,
    readonly warmup: number,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'lockstock-bench-tokens-'));
    this.file = join(this.dir, 'tokens');
    const run = Date.now().toString(36);
    const lines = Array.from({ length: warmup + 2 * perScenario }, (_, i) =>
      signToken(SECRET, `b${run}x${i}`),
    );
    writeFileSync(this.file, `${lines.join('\n')}\n`);
  }

  /** [first, count] of a range: 0 warm-up, 1 and 2 the measured scenarios. */
  range(which: 0 | 1 | 2): [number, number] {
    return which === 0 ? [0, this.warmup] : [this.warmup + (which - 1) * this.perScenario, this.perScenario];
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Measures one server: warm-up, purchases on a large sale, then attempts on a sold-out one. `sales`
 * makes them (a lockstock server: through its API; the minimal endpoint has them seeded).
 */
async function measurePurchases(
  server: Server,
  tokens: BuyerTokens,
  load: HttpLoad,
  sales: (stock: number) => Promise<string> = (stock) => createSale(server.url, stock),
) {
  const wrk = (path: string, range: 0 | 1 | 2, durationSeconds = load.durationSeconds) => {
    const [firstToken, tokenCount] = tokens.range(range);
    return runWrk({
      ...load,
      url: `${server.url}${path}`,
      tokensFile: tokens.file,
      firstToken,
      tokenCount,
      durationSeconds,
    });
  };
  const warm = await sales(10_000_000);
  await wrk(`/api/sales/${warm}/orders`, 0, 1); // JIT and connections warm; these buyers are spent
  const open = await sales(10_000_000);
  const purchases = sample(await wrk(`/api/sales/${open}/orders`, 1), 202);
  const gone = await sales(0);
  const soldOut = sample(await wrk(`/api/sales/${gone}/orders`, 2), 409);
  return { purchases, soldOut };
}

/**
 * HTTP purchases per second measured the way users will: wrk in its own process, 64 connections,
 * distinct buyers, against `lockstock serve --workers 0` (rate limits off, and on), against the
 * embedded default, against the minimal hand-written endpoint (minimal-server.ts) and against a
 * hello-world Fastify route taking the same POST (the baselines), in the same run. Each server is a
 * fresh process per run; the order in which they are measured alternates with `runIndex`, the run's
 * 0-based number (see inRunOrder).
 */
export async function benchHttp(
  redisUrl: string,
  databaseUrl: string,
  tokens: BuyerTokens,
  load: HttpLoad,
  runIndex: number,
  options: { serveProcesses: number } = { serveProcesses: 1 },
): Promise<HttpRun> {
  const measureHello = async () => {
    const hello = await startHello();
    try {
      const [firstToken, tokenCount] = tokens.range(1);
      const wrk = (durationSeconds: number) =>
        runWrk({
          ...load,
          url: `${hello.url}/hello`,
          tokensFile: tokens.file,
          firstToken,
          tokenCount,
          durationSeconds,
        });
      await wrk(1);
      return sample(await wrk(load.durationSeconds), 200);
    } finally {
      await hello.stop();
    }
  };
  const measureServe = async (mode: LockstockMode, otlpEndpoint?: string) => {
    const server = await startLockstock(
      mode,
      redisUrl,
      databaseUrl,
      options.serveProcesses,
      [],
      otlpEndpoint,
    );
    try {
      return await measurePurchases(server, tokens, load);
    } finally {
      await server.stop();
    }
  };
  const measureTraced = async () => {
    const sink = await startOtlpSink();
    try {
      const measured = await measureServe('serve', sink.url);
      // Stopping the server flushed its last batch (SIGTERM: the tracer provider shuts down).
      const exported = sink.receipt();
      if (exported.spans === 0) throw new Error('the traced serve exported no spans');
      return { ...measured, exported };
    } finally {
      await sink.stop();
    }
  };
  const measureMinimal = async () => {
    const server = await startMinimal(redisUrl);
    try {
      // Its warm-up sale is the open one: its warm-up buyers are others than the measured ones.
      const seeded = [server.open, server.open, server.gone];
      return await measurePurchases(server, tokens, load, async () => seeded.shift() as string);
    } finally {
      await server.stop();
    }
  };
  return measureInTurn(
    {
      hello: measureHello,
      minimal: measureMinimal,
      serve: () => measureServe('serve'),
      serveTraced: measureTraced,
      serveLimited: () => measureServe('serve-limited'),
      embedded: () => measureServe('embedded'),
      embeddedMemory: () => measureServe('embedded-memory'),
      ...(options.serveProcesses > 1
        ? {
            serveProcesses: async () => ({
              processes: options.serveProcesses,
              ...(await measureServe('serve-processes')),
            }),
          }
        : {}),
    },
    runIndex,
  );
}
