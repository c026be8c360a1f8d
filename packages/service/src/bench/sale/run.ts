import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { SaleService } from '../../sale/service.js';
import { postgresDatabase } from '../../sale/store/db.js';
import { migrate } from '../../sale/store/migrate.js';
import { PostgresServer, RedisServer } from 'lockstock/servers';
import { describeMachine } from '../machine.js';
import { median, round } from '../stats.js';
import { benchHttp } from './http.js';
import { benchPipeline } from './pipeline.js';
import { benchReservations } from './reservations.js';

export interface BenchSaleOptions {
  runs: number;
  durationMs: number;
  json?: string;
  log?: (line: string) => void;
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
 * `lockstock bench sale`: reservations/s (library vs bare script, same Redis), purchases/s over HTTP
 * (vs hello-world Fastify, same machine and load), orders recorded/s by the pipeline (vs one
 * transaction per order). Private redis-server and PostgreSQL; medians of `runs`.
 */
export async function benchSale(options: BenchSaleOptions) {
  const log = options.log ?? ((line: string) => console.log(line));
  const [redisServer, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  const db = postgresDatabase(postgres.url, { max: 4 });
  try {
    await migrate(db);
    const machine = await describeMachine(redisServer.url);
    log(`machine: ${machine.cpu}, ${machine.cores} cores, node ${machine.node}, redis ${machine.redis}`);
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
    for (let run = 1; run <= options.runs; run++) {
      const reservation = await benchReservations(redisServer.url, db, {
        durationMs: options.durationMs,
        loops: 64,
      });
      samples.reservation.push(reservation);
      log(
        `run ${run}: reservations/s library ${Math.round(reservation.library)}, bare script ${Math.round(reservation.baseline)}`,
      );
      const http = await benchHttp(redisServer.url, postgres.url, httpSale.id, {
        connections: 64,
        durationMs: options.durationMs,
        tokens: 100_000,
      });
      samples.http.push(http);
      log(
        `run ${run}: HTTP purchases/s ${Math.round(http.library)}, hello-world ${Math.round(http.baseline)}`,
      );
      const pipeline = await benchPipeline(redisServer.url, db, {
        orders: 50_000,
        batchSize: 1000,
        baselineOrders: 2_000,
      });
      samples.pipeline.push(pipeline);
      log(
        `run ${run}: orders recorded/s pipeline ${Math.round(pipeline.library)}, one per transaction ${Math.round(pipeline.baseline)}`,
      );
    }
    await ids.stop();
    redis.disconnect();
    const results: SaleBenchResult[] = (Object.keys(samples) as Array<SaleBenchResult['path']>).map(
      (path) => {
        const opsPerSec = Math.round(median(samples[path].map((s) => s.library)));
        const baselineOpsPerSec = Math.round(median(samples[path].map((s) => s.baseline)));
        return {
          path,
          opsPerSec,
          baselineOpsPerSec,
          ratio: round(opsPerSec / baselineOpsPerSec),
          baseline: BASELINES[path],
        };
      },
    );
    log('');
    log('| path | lockstock ops/s | baseline ops/s | ratio | baseline |');
    log('|---|---:|---:|---:|---|');
    for (const r of results)
      log(`| ${r.path} | ${r.opsPerSec} | ${r.baselineOpsPerSec} | ${r.ratio}× | ${r.baseline} |`);
    const report = { machine, results };
    if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    await db.close();
    await Promise.all([redisServer.stop(), postgres.stop()]);
  }
}
