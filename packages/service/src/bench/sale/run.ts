import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { SaleService } from '../../sale/service.js';
import { postgresDatabase } from '../../sale/store/db.js';
import { migrate } from '../../sale/store/migrate.js';
import { PostgresServer, RedisServer } from 'lockstock/servers';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import type { TableData } from '../../support/table.js';
import { describeMachine } from '../machine.js';
import { median, round } from '../stats.js';
import { benchHttp } from './http.js';
import { benchPipeline } from './pipeline.js';
import { benchReservations } from './reservations.js';

export interface BenchSaleOptions {
  runs: number;
  durationMs: number;
  json?: string;
  /** Each path × run is one step, weighted by its planned duration. */
  progress?: StepProgress;
}

export interface SaleBenchResult {
  path: 'reservation' | 'http' | 'pipeline';
  opsPerSec: number;
  baselineOpsPerSec: number;
  ratio: number;
  baseline: string;
}

const BASELINES = {
  reservation: 'bare hm-dianping script (GET, SISMEMBER, INCRBY, SADD, XADD)',
  http: 'hello-world Fastify route, same requests',
  pipeline: 'one transaction per order',
} as const;

/**
 * What a step takes beyond its measured durations, for the plan (ms): signing 100k JWTs and starting
 * two servers for HTTP; reserving 50k orders, then recording them and 2k more one at a time for the
 * pipeline. Estimates only: the ETA corrects itself from the pace so far.
 */
const OVERHEAD_MS = { reservation: 200, http: 3_000, pipeline: 4_000 } as const;

/**
 * `lockstock bench sale`: reservations/s (library vs bare script, same Redis), purchases/s over HTTP
 * (vs hello-world Fastify, same machine and load), orders recorded/s by the pipeline (vs one
 * transaction per order). Private redis-server and PostgreSQL; medians of `runs`.
 */
export async function benchSale(options: BenchSaleOptions) {
  const progress = options.progress ?? silentProgress;
  const [redisServer, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  const db = postgresDatabase(postgres.url, { max: 4 });
  try {
    await migrate(db);
    const machine = await describeMachine(redisServer.url);
    const samples: Record<SaleBenchResult['path'], Array<{ library: number; baseline: number }>> = {
      reservation: [],
      http: [],
      pipeline: [],
    };
    const redis = new Redis(redisServer.url);
    const ids = new SnowflakeIdGenerator(redis);
    await ids.start();
    const httpSale = await new SaleService({ redis, db, nextOrderId: () => ids.next() }).createSale({
      name: 'bench http',
      stock: 10_000_000,
    });
    const measure = {
      reservation: () =>
        benchReservations(redisServer.url, db, { durationMs: options.durationMs, loops: 64 }),
      http: () =>
        benchHttp(redisServer.url, postgres.url, httpSale.id, {
          connections: 64,
          durationMs: options.durationMs,
          tokens: 100_000,
        }),
      pipeline: () =>
        benchPipeline(redisServer.url, db, { orders: 50_000, batchSize: 1000, baselineOrders: 2_000 }),
    };
    const describe = {
      reservation: (s: { library: number; baseline: number }) =>
        `reservations/s library ${Math.round(s.library)}, bare script ${Math.round(s.baseline)}`,
      http: (s: { library: number; baseline: number }) =>
        `HTTP purchases/s ${Math.round(s.library)}, hello-world ${Math.round(s.baseline)}`,
      pipeline: (s: { library: number; baseline: number }) =>
        `orders recorded/s pipeline ${Math.round(s.library)}, one per transaction ${Math.round(s.baseline)}`,
    };
    const paths = Object.keys(samples) as Array<SaleBenchResult['path']>;
    const steps = Array.from({ length: options.runs }, (_, i) => i + 1).flatMap((run) =>
      paths.map((path) => ({
        label: `${path} run ${run}/${options.runs}`,
        weight: (path === 'pipeline' ? 0 : 2 * options.durationMs) + OVERHEAD_MS[path],
        run: async () => {
          const sample = await measure[path]();
          samples[path].push(sample);
          return `run ${run}/${options.runs}: ${describe[path](sample)}`;
        },
      })),
    );
    progress.begin(steps);
    try {
      for (const step of steps) {
        progress.start();
        progress.finish(await step.run());
      }
    } finally {
      progress.end();
    }
    await ids.stop();
    redis.disconnect();
    const results: SaleBenchResult[] = paths.map((path) => {
      const opsPerSec = Math.round(median(samples[path].map((s) => s.library)));
      const baselineOpsPerSec = Math.round(median(samples[path].map((s) => s.baseline)));
      return {
        path,
        opsPerSec,
        baselineOpsPerSec,
        ratio: round(opsPerSec / baselineOpsPerSec),
        baseline: BASELINES[path],
      };
    });
    const report = { machine, results };
    if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    await db.close();
    await Promise.all([redisServer.stop(), postgres.stop()]);
  }
}

/** The report table: each path against its baseline. */
export function saleBenchTable(results: SaleBenchResult[]): TableData {
  const right = 'right' as const;
  return {
    columns: [
      { header: 'path' },
      { header: 'lockstock ops/s', align: right },
      { header: 'baseline ops/s', align: right },
      { header: 'ratio', align: right },
      { header: 'baseline', wrap: true },
    ],
    rows: results.map((r) => [
      r.path,
      String(r.opsPerSec),
      String(r.baselineOpsPerSec),
      `${r.ratio}×`,
      r.baseline,
    ]),
  };
}
