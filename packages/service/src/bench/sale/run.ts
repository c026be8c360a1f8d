import { writeFileSync } from 'node:fs';
import { postgresDatabase } from '../../sale/store/db.js';
import { migrate } from '../../sale/store/migrate.js';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import { watchMachine, type RunRatios } from '../conditions.js';
import { describeMachine } from '../machine.js';
import { BuyerTokens, HttpSession, type HttpRun } from './http.js';
import { benchPipeline } from './pipeline.js';
import { profilePurchases } from './profile.js';
import { benchReservations } from './reservations.js';
import { findWrk } from './wrk.js';
import { summarise, type SaleBenchResult, type Sample } from './rows.js';

export { saleBenchTable, type SaleBenchResult, type SalePath } from './rows.js';

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
  /**
   * Another build's CLI (its dist/cli/main.js): its `serve --workers 0` measured too, off, with rate
   * limits and traced, in the same rounds (before/after in one run).
   */
  before?: string;
  json?: string;
  /** Each path × run is one step, weighted by its planned duration. */
  progress?: StepProgress;
}

/** What a step takes beyond its measured durations, for the plan (ms): servers starting, data set up. */
const OVERHEAD_MS = { reservation: 200, pipeline: 4_000 } as const;
/** Each HTTP server's warm-up, once, before the first round (fresh processes ran slower for ~4 s). */
const WARMUP_SECONDS = 5;

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
  // The profile's buyers (the table's rounds sign their own: HttpSession).
  const tokens = options.profile ? new BuyerTokens(45_000 * options.durationSeconds, 40_000) : undefined;
  try {
    await migrate(db);
    const machine = await describeMachine(redisServer.url);
    if (tokens) {
      const profile = await profilePurchases(redisServer.url, postgres.url, tokens, load, options.runs);
      const { conditions, warnings } = watch.finish();
      if (options.json)
        writeFileSync(
          options.json,
          `${JSON.stringify({ machine, conditions, warnings, load, profile }, null, 2)}\n`,
        );
      return { machine, conditions, warnings, load, results: [] as SaleBenchResult[], profile };
    }
    let session: HttpSession | undefined;
    let spansExported = 0;
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
        // Every server once per round (8 purchase rows, 2 sold-out, the extra servers asked for).
        weight: (10 + (options.before ? 3 : 0)) * (ms + 1500),
        run: async (runIndex: number) => {
          session ??= await HttpSession.start(redisServer.url, postgres.url, load, {
            serveProcesses: options.serveProcesses ?? 1,
            warmupSeconds: WARMUP_SECONDS,
            ...(options.before ? { before: options.before } : {}),
          });
          const s = await session.round(runIndex);
          http.push(s);
          return (
            `HTTP/s hello ${Math.round(s.hello.perSec)}, minimal ${Math.round(s.minimal.perSec)}, ` +
            `serve purchases ${Math.round(s.serve.purchases.perSec)} ` +
            `sold out ${Math.round(s.serve.soldOut.perSec)}, limited ${Math.round(s.serveLimited.perSec)}, traced ` +
            `${Math.round(s.serveTraced.perSec)} / every purchase ${Math.round(s.serveTracedFull.perSec)}, embedded purchases ` +
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
        // Each path measures lockstock and its baseline in turns: first one, then the other first
        // (the HTTP servers in the listed order on even runs, reversed on odd ones).
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
      spansExported = (await session?.stop()) ?? 0;
    }
    if (session && spansExported === 0) throw new Error('the traced serve exported no spans');
    const results = summarise(reservations, http, pipelines, spansExported, options.serveProcesses ?? 1);
    const { conditions, warnings } = watch.finish(
      results.map((r): RunRatios => ({ label: `${r.path} (× ${r.baseline})`, ratios: r.runRatios })),
    );
    const report = { machine, conditions, warnings, load, results, profile: undefined };
    if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    tokens?.dispose();
    await db.close();
    await Promise.all([redisServer.stop(), postgres.stop()]);
  }
}
