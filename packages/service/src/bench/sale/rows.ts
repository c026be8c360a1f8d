import type { TableData } from '../../support/table.js';
import { median, round } from '../stats.js';
import type { HttpRun, HttpSample } from './http.js';

export type SalePath =
  | 'reservation script'
  | 'purchases, serve --workers 0'
  | 'purchases, serve --workers 0, vs hello world'
  | 'sold-out answers, serve --workers 0'
  | 'purchases, serve --workers 0, rate limits on vs off'
  | 'purchases, serve --workers 0, tracing on vs off'
  | 'purchases, serve --workers 0, tracing every purchase vs off'
  | 'before: purchases, serve --workers 0, rate limits on vs off'
  | 'before: purchases, serve --workers 0, tracing on vs off'
  | 'purchases, embedded default'
  | 'sold-out answers, embedded default'
  | 'purchases, embedded default, durability fsync vs memory'
  | `purchases, serve --workers 0 --processes ${number} vs 1`
  | `purchases per HTTP process, serve --workers 0 --processes ${number}`
  | 'pipeline into PostgreSQL';

export interface SaleBenchResult {
  path: SalePath;
  /** Medians over the runs (the ratio: the median of the runs' ratios). */
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
  /**
   * CPU per request, µs (server process + the bench's Redis; medians over the runs), and the
   * baseline's over lockstock's: the median of the runs' CPU ratios (above 1: lockstock costs less).
   * The steadier figure on a loaded machine, where the rate follows whoever else wants the cores.
   */
  cpuUsPerRequest?: { library: number; baseline: number };
  cpuRatio?: number;
}

const HELLO = 'hello-world Fastify route, same POST, same wrk load';
const MINIMAL =
  'minimal hand-written endpoint: Fastify + fast-jwt (HS256 per request) + ioredis + the hm-dianping script by EVALSHA, same Redis, same wrk load';

/** A measured pair of one run: lockstock's figure and its baseline's. */
export type Sample = { library: number; baseline: number };

const med = (values: number[]) => Math.round(median(values));

/** Run i's ratio: lockstock's figure of run i over its baseline's of run i. */
const byRun = (library: number[], baseline: number[]) =>
  library.map((value, i) => round(value / (baseline[i] ?? NaN)));

/** A row: medians of each side, and the median of the runs' ratios (issue 49's one method). */
function row(
  path: SalePath,
  library: number[],
  baselines: number[],
  baseline: string,
  target?: number,
): SaleBenchResult {
  const runRatios = byRun(library, baselines);
  return {
    path,
    opsPerSec: med(library),
    baselineOpsPerSec: med(baselines),
    ratio: round(median(runRatios)),
    runRatios,
    ...(target === undefined ? {} : { target }),
    baseline,
  };
}

function httpRow(
  path: SalePath,
  samples: HttpSample[],
  baselines: HttpSample[],
  target: number | undefined,
  baseline = HELLO,
): SaleBenchResult {
  return {
    ...row(
      path,
      samples.map((s) => s.perSec),
      baselines.map((s) => s.perSec),
      baseline,
      target,
    ),
    latencyMs: {
      p50: round(median(samples.map((s) => s.p50Ms))),
      p99: round(median(samples.map((s) => s.p99Ms))),
    },
    unexpected: samples.reduce((sum, s) => sum + s.unexpected, 0),
    ...cpuOf(samples, baselines),
  };
}

const cpuTotal = (s: HttpSample) => (s.cpuUs ? s.cpuUs.server + s.cpuUs.redis : undefined);

/** The CPU figures of a row, when every run of both sides has them. */
function cpuOf(samples: HttpSample[], baselines: HttpSample[]) {
  const library = samples.map(cpuTotal);
  const baseline = baselines.map(cpuTotal);
  if ([...library, ...baseline].some((v) => v === undefined || !(v > 0))) return {};
  const [l, b] = [library as number[], baseline as number[]];
  return {
    cpuUsPerRequest: { library: round(median(l), 1), baseline: round(median(b), 1) },
    cpuRatio: round(median(l.map((value, i) => (b[i] as number) / value))),
  };
}

export function summarise(
  reservations: Sample[],
  http: HttpRun[],
  pipelines: Sample[],
  spansExported: number,
  serveProcesses: number,
): SaleBenchResult[] {
  const results: SaleBenchResult[] = [];
  if (reservations.length > 0) {
    results.push(
      row(
        'reservation script',
        reservations.map((s) => s.library),
        reservations.map((s) => s.baseline),
        'bare hm-dianping script (GET, SISMEMBER, INCRBY, SADD, XADD), same Redis and client',
        0.8,
      ),
    );
  }
  if (http.length > 0) {
    const serve = http.map((r) => r.serve.purchases);
    const SERVE = 'purchases, serve --workers 0 (above)';
    results.push(
      httpRow(
        'purchases, serve --workers 0',
        serve,
        http.map((r) => r.minimal),
        1.0,
        MINIMAL,
      ),
      httpRow(
        'purchases, serve --workers 0, vs hello world',
        serve,
        http.map((r) => r.hello),
        undefined,
      ),
      httpRow(
        'sold-out answers, serve --workers 0',
        http.map((r) => r.serve.soldOut),
        http.map((r) => r.hello),
        1.0,
      ),
      // The shipped rate limits (per user 5/s, per address on) against none, same build.
      httpRow(
        'purchases, serve --workers 0, rate limits on vs off',
        http.map((r) => r.serveLimited),
        serve,
        0.9,
        `${SERVE}; limited: the shipped per-user limit and a per-address limit no load generator reaches`,
      ),
      {
        ...httpRow(
          'purchases, serve --workers 0, tracing on vs off',
          http.map((r) => r.serveTraced),
          serve,
          0.9,
          `${SERVE}; traced: OTLP/HTTP to a local sink, the default sampling (parent-based, 1% of new traces)`,
        ),
        spansExported,
      },
      httpRow(
        'purchases, serve --workers 0, tracing every purchase vs off',
        http.map((r) => r.serveTracedFull),
        serve,
        undefined,
        `${SERVE}; traced: OTEL_TRACES_SAMPLER=parentbased_always_on`,
      ),
      httpRow(
        'purchases, embedded default',
        http.map((r) => r.embedded.purchases),
        serve,
        0.9,
        SERVE,
      ),
      httpRow(
        'sold-out answers, embedded default',
        http.map((r) => r.embedded.soldOut),
        http.map((r) => r.serve.soldOut),
        0.9,
        'sold-out answers, serve --workers 0 (above)',
      ),
      // The cost of `--durability fsync` (the default) against `memory`; no target.
      httpRow(
        'purchases, embedded default, durability fsync vs memory',
        http.map((r) => r.embedded.purchases),
        http.map((r) => r.embeddedMemory),
        undefined,
        'purchases, embedded default with --durability memory',
      ),
    );
    const before = http.flatMap((r) => (r.before ? [r.before] : []));
    if (before.length === http.length) {
      const off = before.map((b) => b.serve);
      const BEFORE = "the --before build's serve --workers 0, rate limits and tracing off";
      results.push(
        httpRow(
          'before: purchases, serve --workers 0, rate limits on vs off',
          before.map((b) => b.limited),
          off,
          undefined,
          BEFORE,
        ),
        httpRow(
          'before: purchases, serve --workers 0, tracing on vs off',
          before.map((b) => b.traced),
          off,
          undefined,
          `${BEFORE}; traced at that build's default sampling`,
        ),
      );
    }
    const many = http.flatMap((r) => (r.serveProcesses ? [r.serveProcesses] : []));
    if (serveProcesses > 1 && many.length === http.length) {
      const processes = serveProcesses;
      results.push(
        httpRow(
          `purchases, serve --workers 0 --processes ${processes} vs 1`,
          many,
          serve,
          undefined,
          'purchases, serve --workers 0 (one process, above)',
        ),
        httpRow(
          `purchases per HTTP process, serve --workers 0 --processes ${processes}`,
          many.map((s) => ({ ...s, perSec: s.perSec / processes })),
          serve,
          undefined,
          'purchases, serve --workers 0 (one process, above)',
        ),
      );
    }
  }
  if (pipelines.length > 0) {
    results.push(
      row(
        'pipeline into PostgreSQL',
        pipelines.map((s) => s.library),
        pipelines.map((s) => s.baseline),
        'one transaction per order (target: 40,000 orders/s)',
      ),
    );
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
      { header: 'CPU µs/req', align: right },
      { header: 'CPU ratio', align: right },
      { header: 'baseline', wrap: true },
    ],
    rows: results.map((r) => [
      r.path,
      r.opsPerSec.toLocaleString('en-US'),
      r.latencyMs ? `${r.latencyMs.p50} / ${r.latencyMs.p99}` : '',
      r.baselineOpsPerSec.toLocaleString('en-US'),
      `${r.ratio}×`,
      r.target === undefined ? '' : `≥ ${r.target}×`,
      r.cpuUsPerRequest ? `${r.cpuUsPerRequest.library} / ${r.cpuUsPerRequest.baseline}` : '',
      r.cpuRatio === undefined ? '' : `${r.cpuRatio}×`,
      r.baseline +
        (r.unexpected ? ` (${r.unexpected} other answers)` : '') +
        (r.spansExported === undefined ? '' : ` (${r.spansExported.toLocaleString('en-US')} spans exported)`),
    ]),
  };
}
