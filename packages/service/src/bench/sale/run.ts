import { writeFileSync } from 'node:fs';
import { postgresDatabase } from '../../sale/store/db.js';
import { migrate } from '../../sale/store/migrate.js';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import type { TableData } from '../../support/table.js';
import { watchMachine, type RunRatios } from '../conditions.js';
import { describeMachine } from '../machine.js';
import { median, round } from '../stats.js';
import { benchHttp, BuyerTokens, type HttpRun, type HttpSample } from './http.js';
import { benchPipeline } from './pipeline.js';
import { profilePurchases } from './profile.js';
import { benchReservations } from './reservations.js';
import { findWrk } from './wrk.js';

export interface BenchSaleOptions {
  runs: number;
  /** Length of one measurement, seconds (wrk's resolution). */
  durationSeconds: number;
  /** Orders the pipeline records per run. @default 100000 */
  pipelineOrders?: number;
  /**
   * Also measure `serve --workers 0 --processes N` (N HTTP processes sharing the port) against one
   * process; 1 or less: not measured. @default 1
   */
  serveProcesses?: number;
  /**
   * Instead of the table: CPU profiles of `serve --workers 0` and the minimal endpoint under wrk,
   * side by side per request (profile.ts), `runs` rounds.
   */
  profile?: boolean;
  json?: string;
  /** Each path × run is one step, weighted by its planned duration. */
  progress?: StepProgress;
}

export type SalePath =
  | 'reservation script'
  | 'purchases, serve --workers 0'
  | 'purchases, serve --workers 0, vs hello world'
  | 'sold-out answers, serve --workers 0'
  | 'purchases, serve --workers 0, rate limits on vs off'
  | 'purchases, serve --workers 0, tracing on vs off'
  | 'purchases, embedded default'
  | 'sold-out answers, embedded default'
  | 'purchases, embedded default, durability fsync vs memory'
  | `purchases, serve --workers 0 --processes ${number} vs 1`
  | `purchases per HTTP process, serve --workers 0 --processes ${number}`
  | 'pipeline into PostgreSQL';

export interface SaleBenchResult {
  path: SalePath;
  /** Medians over the runs. */
  opsPerSec: number;
  latencyMs?: { p50: number; p99: number };
  baselineOpsPerSec: number;
  ratio: number;
  /** The ratio in each run, in run order (how much the runs agree). */
  runRatios: number[];
  /** The ratio the issue asks for (none: no target). */
  target?: number;
  baseline: string;
  /** Responses with another status than the path's, summed over the runs (should be 0). */
  unexpected?: number;
  /** The tracing row: spans the traced server exported to the benchmark's sink, summed over the runs. */
  spansExported?: number;
}

const HELLO = 'hello-world Fastify route, same POST, same wrk load';
const MINIMAL =
  'minimal hand-written endpoint: Fastify + fast-jwt (HS256 per request) + ioredis + the hm-dianping script by EVALSHA, same Redis, same wrk load';

/** What a step takes beyond its measured durations, for the plan (ms): servers starting, data set up. */
const OVERHEAD_MS = { reservation: 200, http: 18_000, pipeline: 4_000 } as const;

type Sample = { library: number; baseline: number };

/**
 * `lockstock bench sale`: reservations/s (library vs the bare hm-dianping script, same Redis, Node
 * loops: the script's Redis cost), HTTP purchases and sold-out answers/s of `serve --workers 0` and of
 * the embedded default against a hello-world Fastify route (wrk, a separate process, 64 connections,
 * distinct buyers, same run), and orders recorded/s by the pipeline into PostgreSQL (vs one transaction
 * per order). Private redis-server and PostgreSQL; medians of `runs`.
 */
export async function benchSale(options: BenchSaleOptions) {
  const progress = options.progress ?? silentProgress;
  const watch = watchMachine();
  findWrk(); // installs it before anything starts, if it has to
  const [redisServer, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  const db = postgresDatabase(postgres.url, { max: 4 });
  const load = { connections: 64, threads: 2, durationSeconds: options.durationSeconds };
  const tokens = new BuyerTokens(45_000 * options.durationSeconds, 40_000);
  try {
    await migrate(db);
    const machine = await describeMachine(redisServer.url);
    if (options.profile) {
      const profile = await profilePurchases(redisServer.url, postgres.url, tokens, load, options.runs);
      const { conditions, warnings } = watch.finish();
      if (options.json)
        writeFileSync(
          options.json,
          `${JSON.stringify({ machine, conditions, warnings, load, profile }, null, 2)}\n`,
        );
      return { machine, conditions, warnings, load, results: [] as SaleBenchResult[], profile };
    }
    const reservations: Sample[] = [];
    const pipelines: Sample[] = [];
    const http: HttpRun[] = [];
    const ms = options.durationSeconds * 1000;
    const plan = {
      reservation: {
        weight: 2 * ms + OVERHEAD_MS.reservation,
        run: async (runIndex: number) => {
          const s = await benchReservations(redisServer.url, db, { durationMs: ms, loops: 64, runIndex });
          reservations.push(s);
          return `reservations/s library ${Math.round(s.library)}, bare script ${Math.round(s.baseline)}`;
        },
      },
      http: {
        // hello: warm-up + 1; minimal and each of the five lockstock servers: warm-up + 2.
        weight: 2 * (ms + 1000) + 6 * (2 * ms + 1000) + OVERHEAD_MS.http,
        run: async (runIndex: number) => {
          const s = await benchHttp(redisServer.url, postgres.url, tokens, load, runIndex, {
            serveProcesses: options.serveProcesses ?? 1,
          });
          http.push(s);
          return (
            `HTTP/s hello ${Math.round(s.hello.perSec)}, minimal ${Math.round(s.minimal.purchases.perSec)}, ` +
            `serve purchases ${Math.round(s.serve.purchases.perSec)} ` +
            `sold out ${Math.round(s.serve.soldOut.perSec)}, traced purchases ` +
            `${Math.round(s.serveTraced.purchases.perSec)}, embedded purchases ` +
            `${Math.round(s.embedded.purchases.perSec)} sold out ${Math.round(s.embedded.soldOut.perSec)}`
          );
        },
      },
      pipeline: {
        weight: OVERHEAD_MS.pipeline,
        run: async (runIndex: number) => {
          const s = await benchPipeline(redisServer.url, db, {
            orders: options.pipelineOrders ?? 100_000,
            batchSize: 1000,
            baselineOrders: 2_000,
            runIndex,
          });
          pipelines.push(s);
          return `orders recorded/s pipeline ${Math.round(s.library)}, one per transaction ${Math.round(s.baseline)}`;
        },
      },
    };
    const paths = Object.keys(plan) as Array<keyof typeof plan>;
    // A warm-up round first, not counted (a cold first run measured a fraction of the next): the
    // reservation script and the pipeline once, shorter. Each HTTP server warms up in every run.
    const warmupMs = Math.min(ms, 1000);
    const warmups = [
      {
        label: 'reservation warm-up',
        weight: 2 * warmupMs + OVERHEAD_MS.reservation,
        run: async () => {
          await benchReservations(redisServer.url, db, { durationMs: warmupMs, loops: 64, runIndex: 0 });
          return 'warm-up: reservation script';
        },
      },
      {
        label: 'pipeline warm-up',
        weight: OVERHEAD_MS.pipeline / 2,
        run: async () => {
          await benchPipeline(redisServer.url, db, {
            orders: Math.min(options.pipelineOrders ?? 100_000, 10_000),
            batchSize: 1000,
            baselineOrders: 200,
            runIndex: 0,
          });
          return 'warm-up: pipeline';
        },
      },
    ];
    const measured = Array.from({ length: options.runs }, (_, i) => i + 1).flatMap((run) =>
      paths.map((path) => ({
        label: `${path} run ${run}/${options.runs}`,
        weight: plan[path].weight,
        // Each path measures lockstock and its baseline in turns: first one, then the other first.
        run: async () => `run ${run}/${options.runs}: ${await plan[path].run(run - 1)}`,
      })),
    );
    const steps = [...warmups, ...measured];
    progress.begin(steps);
    try {
      for (const step of steps) {
        progress.start();
        progress.finish(await step.run());
      }
    } finally {
      progress.end();
    }
    const results = summarise(reservations, http, pipelines);
    const { conditions, warnings } = watch.finish(
      results.map((r): RunRatios => ({ label: `${r.path} (× ${r.baseline})`, ratios: r.runRatios })),
    );
    const report = { machine, conditions, warnings, load, results, profile: undefined };
    if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    tokens.dispose();
    await db.close();
    await Promise.all([redisServer.stop(), postgres.stop()]);
  }
}

const med = (values: number[]) => Math.round(median(values));

/** Run i's ratio: lockstock's figure of run i over its baseline's of run i. */
const byRun = (library: number[], baseline: number[]) =>
  library.map((value, i) => round(value / (baseline[i] ?? NaN)));

function httpRow(
  path: SalePath,
  samples: HttpSample[],
  baselines: number[],
  target: number | undefined,
  baseline = HELLO,
): SaleBenchResult {
  const opsPerSec = med(samples.map((s) => s.perSec));
  const baselineOpsPerSec = med(baselines);
  return {
    path,
    opsPerSec,
    latencyMs: {
      p50: round(median(samples.map((s) => s.p50Ms))),
      p99: round(median(samples.map((s) => s.p99Ms))),
    },
    baselineOpsPerSec,
    ratio: round(opsPerSec / baselineOpsPerSec),
    runRatios: byRun(
      samples.map((s) => s.perSec),
      baselines,
    ),
    target,
    baseline,
    unexpected: samples.reduce((sum, s) => sum + s.unexpected, 0),
  };
}

function summarise(reservations: Sample[], http: HttpRun[], pipelines: Sample[]): SaleBenchResult[] {
  const hello = http.map((r) => r.hello.perSec);
  const results: SaleBenchResult[] = [];
  if (reservations.length > 0) {
    const opsPerSec = med(reservations.map((s) => s.library));
    const baselineOpsPerSec = med(reservations.map((s) => s.baseline));
    results.push({
      path: 'reservation script',
      opsPerSec,
      baselineOpsPerSec,
      ratio: round(opsPerSec / baselineOpsPerSec),
      runRatios: byRun(
        reservations.map((s) => s.library),
        reservations.map((s) => s.baseline),
      ),
      target: 0.8,
      baseline: 'bare hm-dianping script (GET, SISMEMBER, INCRBY, SADD, XADD), same Redis and client',
    });
  }
  if (http.length > 0) {
    results.push(
      httpRow(
        'purchases, serve --workers 0',
        http.map((r) => r.serve.purchases),
        http.map((r) => r.minimal.purchases.perSec),
        1.0,
        MINIMAL,
      ),
      httpRow(
        'purchases, serve --workers 0, vs hello world',
        http.map((r) => r.serve.purchases),
        hello,
        undefined,
      ),
      httpRow(
        'sold-out answers, serve --workers 0',
        http.map((r) => r.serve.soldOut),
        hello,
        1.0,
      ),
      // What turning the rate limits on costs a purchase (no target: the figure the README quotes).
      httpRow(
        'purchases, serve --workers 0, rate limits on vs off',
        http.map((r) => r.serveLimited.purchases),
        http.map((r) => r.serve.purchases.perSec),
        undefined,
        'purchases, serve --workers 0 (rate limits off, above)',
      ),
      // What tracing costs a purchase, exporting every span it keeps (no target: the README quotes it).
      {
        ...httpRow(
          'purchases, serve --workers 0, tracing on vs off',
          http.map((r) => r.serveTraced.purchases),
          http.map((r) => r.serve.purchases.perSec),
          undefined,
          'purchases, serve --workers 0 (tracing off, above); traced: OTLP/HTTP to a local sink, SDK defaults',
        ),
        spansExported: http.reduce((sum, r) => sum + r.serveTraced.exported.spans, 0),
      },
      httpRow(
        'purchases, embedded default',
        http.map((r) => r.embedded.purchases),
        http.map((r) => r.serve.purchases.perSec),
        0.9,
        'purchases, serve --workers 0 (above)',
      ),
      httpRow(
        'sold-out answers, embedded default',
        http.map((r) => r.embedded.soldOut),
        http.map((r) => r.serve.soldOut.perSec),
        0.9,
        'sold-out answers, serve --workers 0 (above)',
      ),
      // The cost of `--durability fsync` (the default): the same embedded default with appendfsync
      // everysec as the baseline; no target, the figure is what the README quotes.
      httpRow(
        'purchases, embedded default, durability fsync vs memory',
        http.map((r) => r.embedded.purchases),
        http.map((r) => r.embeddedMemory.purchases.perSec),
        undefined,
        'purchases, embedded default with --durability memory',
      ),
    );
  }
  const processes = http[0]?.serveProcesses?.processes ?? 1;
  if (processes > 1) {
    const many = http.flatMap((r) => (r.serveProcesses ? [r.serveProcesses.purchases] : []));
    const one = http.map((r) => r.serve.purchases.perSec);
    results.push(
      httpRow(
        `purchases, serve --workers 0 --processes ${processes} vs 1`,
        many,
        one,
        undefined,
        'purchases, serve --workers 0 (one process, above)',
      ),
      httpRow(
        `purchases per HTTP process, serve --workers 0 --processes ${processes}`,
        many.map((s) => ({ ...s, perSec: s.perSec / processes })),
        one,
        undefined,
        'purchases, serve --workers 0 (one process, above)',
      ),
    );
  }
  if (pipelines.length > 0) {
    const opsPerSec = med(pipelines.map((s) => s.library));
    const baselineOpsPerSec = med(pipelines.map((s) => s.baseline));
    results.push({
      path: 'pipeline into PostgreSQL',
      opsPerSec,
      baselineOpsPerSec,
      ratio: round(opsPerSec / baselineOpsPerSec),
      runRatios: byRun(
        pipelines.map((s) => s.library),
        pipelines.map((s) => s.baseline),
      ),
      baseline: 'one transaction per order (target: 40,000 orders/s)',
    });
  }
  return results;
}

/** The report table: each path against its baseline. */
export function saleBenchTable(results: SaleBenchResult[]): TableData {
  const right = 'right' as const;
  return {
    columns: [
      { header: 'path' },
      { header: 'lockstock /s', align: right },
      { header: 'p50 / p99 ms', align: right },
      { header: 'baseline /s', align: right },
      { header: 'ratio', align: right },
      { header: 'target', align: right },
      { header: 'baseline', wrap: true },
    ],
    rows: results.map((r) => [
      r.path,
      r.opsPerSec.toLocaleString('en-US'),
      r.latencyMs ? `${r.latencyMs.p50} / ${r.latencyMs.p99}` : '',
      r.baselineOpsPerSec.toLocaleString('en-US'),
      `${r.ratio}×`,
      r.target === undefined ? '' : `≥ ${r.target}×`,
      r.baseline +
        (r.unexpected ? ` (${r.unexpected} other answers)` : '') +
        (r.spansExported === undefined ? '' : ` (${r.spansExported.toLocaleString('en-US')} spans exported)`),
    ]),
  };
}
