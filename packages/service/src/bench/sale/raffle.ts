import { writeFileSync } from 'node:fs';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { Redis } from 'ioredis';
import { saleContext } from '../../sale/context/context.js';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { raffleQueries } from '../../sale/raffle/keys.js';
import { RaffleService } from '../../sale/raffle/raffles.js';
import { SaleService } from '../../sale/service.js';
import { postgresDatabase, type Database } from '../../sale/store/db.js';
import { migrate } from '../../sale/store/migrate.js';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import type { TableData } from '../../support/table.js';
import { describeMachine, type MachineInfo } from '../machine.js';
import { median, round } from '../stats.js';

export interface BenchRaffleOptions {
  runs: number;
  /** Entries sent through enter.lua per run. @default 100000 */
  entries?: number;
  /** Entries the timed draw orders (bulk-loaded into the record). @default 1000000 */
  drawEntries?: number;
  /** Units of the drawn raffle (its winners, served after the draw). @default 1000 */
  stock?: number;
  progress?: StepProgress;
  /** Also write the report here, as JSON. */
  json?: string;
}

export interface RaffleBenchReport {
  machine: MachineInfo;
  entries: number;
  drawEntries: number;
  stock: number;
  /** Medians over the runs. */
  entriesPerSec: number;
  recordedPerSec: number;
  drawMs: number;
  serveMs: number;
}

/** Entries in flight at once (one connection, as a `serve` process's). */
const IN_FLIGHT = 256;

/**
 * `bench sale --raffle`: a raffle's entries/s (enter.lua on one Redis connection, IN_FLIGHT at a time,
 * as the HTTP route calls it), the record's entries/s (recordEntries: the stream into raffle_entries),
 * and the draw's time for `drawEntries` recorded entries (draw-order.sql, one transaction) plus the
 * time to serve its `stock` winners (promote.lua, as reservations into the orders stream).
 */
export async function benchRaffle(options: BenchRaffleOptions): Promise<RaffleBenchReport> {
  const entries = options.entries ?? 100_000;
  const drawEntries = options.drawEntries ?? 1_000_000;
  const stock = options.stock ?? 1_000;
  const progress = options.progress ?? silentProgress;
  const [redisServer, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  const redis = new Redis(redisServer.url);
  const db = postgresDatabase(postgres.url);
  const context = saleContext(redis);
  const ids = new SnowflakeIdGenerator(context);
  try {
    await migrate(db);
    await ids.start();
    const sales = new SaleService({ context, db, nextOrderId: () => ids.next(), soldOutCache: false });
    const raffles = new RaffleService({ context, db, nextOrderId: () => ids.next() });
    const runs: Array<{ entriesPerSec: number; recordedPerSec: number; drawMs: number; serveMs: number }> =
      [];
    progress.begin(
      Array.from({ length: options.runs }, (_, run) => [
        { label: `entries, run ${run + 1}`, weight: 1 },
        { label: `draw of ${drawEntries} entries, run ${run + 1}`, weight: 2 },
      ]).flat(),
    );
    for (let run = 0; run < options.runs; run++) {
      const newRaffle = (n: number) =>
        sales.createSale({
          name: `bench raffle ${run}`,
          stock: n,
          admission: 'raffle',
          drawAt: new Date(Date.now() + 3_600_000),
          endsAt: new Date(Date.now() + 7_200_000),
        });
      progress.start();
      const entered = await newRaffle(stock);
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < entries) {
            const user = `u${next++}`;
            const result = await raffles.enter(entered.id, user);
            if (!result.ok) throw new Error(`entry refused: ${result.code}`);
          }
        }),
      );
      const enterSeconds = (performance.now() - started) / 1000;
      const recordStarted = performance.now();
      await raffles.recordEntries(entered.id);
      const recordSeconds = (performance.now() - recordStarted) / 1000;
      progress.finish(`${Math.round(entries / enterSeconds)} entries/s`);

      progress.start();
      const drawn = await newRaffle(stock);
      await loadEntries(db, drawn.id, drawEntries);
      const outcome = await raffles.drawNow(drawn.id);
      if (outcome.result !== 'drawn' || outcome.entries !== drawEntries) {
        throw new Error(`the draw did not order ${drawEntries} entries: ${JSON.stringify(outcome)}`);
      }
      const serveStarted = performance.now();
      const served = await raffles.serve(drawn.id);
      if (served.given !== Math.min(stock, drawEntries)) throw new Error(`served ${served.given} winners`);
      runs.push({
        entriesPerSec: entries / enterSeconds,
        recordedPerSec: entries / recordSeconds,
        drawMs: outcome.ms ?? 0,
        serveMs: performance.now() - serveStarted,
      });
      progress.finish(`draw of ${drawEntries} entries: ${Math.round(outcome.ms ?? 0)} ms`);
    }
    progress.end();
    const report = {
      machine: await describeMachine(redisServer.url),
      entries,
      drawEntries,
      stock,
      entriesPerSec: Math.round(median(runs.map((r) => r.entriesPerSec))),
      recordedPerSec: Math.round(median(runs.map((r) => r.recordedPerSec))),
      drawMs: Math.round(median(runs.map((r) => r.drawMs))),
      serveMs: round(median(runs.map((r) => r.serveMs))),
    };
    if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    await ids.stop().catch(() => undefined);
    redis.disconnect();
    await db.close();
    await Promise.all([redisServer.stop(), postgres.stop()]);
  }
}

/** Bulk-loads `n` recorded entries (what the recorder writes), in one statement. */
async function loadEntries(db: Database, saleId: string, n: number): Promise<void> {
  await db.query(raffleQueries.benchEntries, [saleId, n]);
}

/** The report as a table. */
export function raffleBenchTable(report: RaffleBenchReport): TableData {
  const right = 'right' as const;
  const n = (x: number) => x.toLocaleString('en-US');
  return {
    columns: [{ header: 'raffle' }, { header: 'result', align: right }],
    rows: [
      [
        `entries/s (enter.lua, ${IN_FLIGHT} in flight, ${n(report.entries)} entries)`,
        n(report.entriesPerSec),
      ],
      ['entries recorded/s (stream → raffle_entries)', n(report.recordedPerSec)],
      [`draw of ${n(report.drawEntries)} recorded entries (one transaction)`, `${n(report.drawMs)} ms`],
      [`serving its ${n(report.stock)} winners (promote.lua → orders stream)`, `${report.serveMs} ms`],
    ],
  };
}
