import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Cluster, Redis } from 'ioredis';
import { PostgresServer, RedisCluster } from '@lockstock/servers';
import { saleContext } from '../../sale/context/context.js';
import { MAX_STOCK } from '../../sale/new-sale.js';
import { SaleService } from '../../sale/service.js';
import { postgresDatabase } from '../../sale/store/db.js';
import { migrate } from '../../sale/store/migrate.js';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import type { TableData } from '../../support/table.js';
import { endChildren, nextMessage } from '../locks/children.js';
import { describeMachine, type MachineInfo } from '../machine.js';
import { median, round } from '../stats.js';
import type { ShardsWorkerConfig, ShardsWorkerReport } from './shards-worker.js';

const workerPath = fileURLToPath(new URL('./shards-worker.js', import.meta.url));

export interface BenchShardsOptions {
  /** Parts of the sale, one Cluster of as many masters per entry (1: today's unsplit sale). */
  shards: number[];
  /** Load processes (each a Cluster client with `loops` buying loops). @default cores − max(shards), at least 1 */
  processes?: number;
  /** @default 64 */
  loops?: number;
  durationSeconds: number;
  runs: number;
  json?: string;
  progress?: StepProgress;
}

export interface ShardsResult {
  /** Parts of the sale, and masters of its Cluster. */
  shards: number;
  /** Reservations per second, all load processes (median of runs). */
  reservationsPerSec: number;
  /** Redis CPU (user + sys, every master) per reservation, µs (median of runs). */
  cpuPerReservationUs: number;
  /** Each master's share of that CPU, in master order (the run with the median throughput). */
  masterShares: number[];
  /** The bound each share must stay under: 1.25 / shards. */
  shareLimit: number;
  /** Every share within the bound in every run. */
  balanced: boolean;
  latencyMs: { p50: number; p99: number };
  /** Refused or failed reservations (summed over runs; 0 expected: the stock lasts). */
  refused: number;
  errors: number;
}

export interface ShardsReport {
  machine: MachineInfo;
  load: { processes: number; loops: number; durationSeconds: number; runs: number };
  results: ShardsResult[];
}

interface Run {
  perSec: number;
  cpuUs: number;
  shares: number[];
  p50: number;
  p99: number;
  refused: number;
  errors: number;
}

/**
 * `lockstock bench sale --shards 1,2,3`: one hot sale on a Cluster of K masters, split into K parts
 * (K = 1: the sale as it is without `shards`). Load processes buy one unit per fresh buyer in loops
 * through the Reserver (the purchase path of `serve` without HTTP, whose tier scales with processes
 * on its own). Each master's CPU is read from `INFO CPU` before and after the measured window: the
 * Redis CPU per reservation, and each master's share of it — a split sale's work must spread over its
 * masters (≤ 1.25/K each). The reservations/s scale with K only if the machine has a core per master
 * and enough for the load: here they are reported, not judged.
 */
export async function benchShards(options: BenchShardsOptions): Promise<ShardsReport> {
  const progress = options.progress ?? silentProgress;
  const loops = options.loops ?? 64;
  const processes = options.processes ?? Math.max(1, availableParallelism() - Math.max(...options.shards));
  const durationMs = options.durationSeconds * 1000;
  const postgres = await PostgresServer.start();
  const db = postgresDatabase(postgres.url, { max: 2 });
  const runs = new Map<number, Run[]>();
  let machine: MachineInfo | undefined;
  try {
    await migrate(db);
    const steps = options.shards.flatMap((shards) =>
      Array.from({ length: options.runs }, (_, run) => ({
        label: `${shards} part${shards === 1 ? '' : 's'} on ${shards} master${shards === 1 ? '' : 's'}, run ${run + 1}/${options.runs}`,
        weight: durationMs + 4_000,
        shards,
        run,
      })),
    );
    progress.begin(steps);
    try {
      for (const step of steps) {
        progress.start();
        // A lone master learns no address of its own from a MEET: it must be told the one to announce.
        const cluster = await RedisCluster.start({
          masters: step.shards,
          args: ['--cluster-announce-ip', '127.0.0.1'],
        });
        try {
          machine ??= await describeMachine(cluster.nodes[0]?.url as string);
          const result = await measure(cluster, db, step.shards, step.run, { processes, loops, durationMs });
          runs.set(step.shards, [...(runs.get(step.shards) ?? []), result]);
          progress.finish(
            `${step.label}: ${Math.round(result.perSec)} reservations/s, ${round(result.cpuUs)} µs of Redis CPU each, masters ${result.shares.map((s) => `${Math.round(s * 100)}%`).join(' · ')}`,
          );
        } finally {
          await cluster.stop();
        }
      }
    } finally {
      progress.end();
    }
  } finally {
    await db.close();
    await postgres.stop();
  }
  const results = options.shards.map((shards) => summarize(shards, runs.get(shards) ?? []));
  const report: ShardsReport = {
    machine: machine as MachineInfo,
    load: { processes, loops, durationSeconds: options.durationSeconds, runs: options.runs },
    results,
  };
  if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
  return report;
}

async function measure(
  cluster: RedisCluster,
  db: ReturnType<typeof postgresDatabase>,
  shards: number,
  run: number,
  load: { processes: number; loops: number; durationMs: number },
): Promise<Run> {
  const redis = new Cluster(cluster.startupNodes);
  const service = new SaleService({
    context: saleContext(redis),
    db,
    nextOrderId: () => {
      throw new Error('the benchmark creates a sale only');
    },
    soldOutCache: false,
  });
  // Stock that outlasts the run in every part: no part runs dry, no transfer, no sold out.
  const sale = await service.createSale({ name: `bench ${shards} parts`, stock: MAX_STOCK, shards });
  await service.close();
  redis.disconnect();
  const children = Array.from({ length: load.processes }, () =>
    fork(workerPath, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const masters = cluster.nodes.map((node) => new Redis(node.url));
  try {
    const ready = children.map((child) => nextMessage(child, 'ready'));
    children.forEach((child, i) =>
      child.send({
        nodes: cluster.startupNodes,
        saleId: sale.id,
        loops: load.loops,
        durationMs: load.durationMs,
        buyerPrefix: `k${shards}r${run}w${i}-`,
      } satisfies ShardsWorkerConfig),
    );
    await Promise.all(ready);
    const reports = children.map((child) => nextMessage<ShardsWorkerReport>(child, 'done'));
    const before = await Promise.all(masters.map(cpuSeconds));
    const began = performance.now();
    for (const child of children) child.send({ type: 'go' });
    const done = await Promise.all(reports);
    const seconds = (performance.now() - began) / 1000;
    const after = await Promise.all(masters.map(cpuSeconds));
    const used = after.map((cpu, i) => Math.max(0, cpu - (before[i] as number)));
    const total = used.reduce((a, b) => a + b, 0);
    const reserved = done.reduce((sum, r) => sum + r.reserved, 0);
    const latencies = done.flatMap((r) => r.latenciesUs).sort((a, b) => a - b);
    return {
      perSec: reserved / seconds,
      cpuUs: reserved > 0 ? (total / reserved) * 1e6 : 0,
      shares: used.map((cpu) => (total > 0 ? cpu / total : 0)),
      p50: (quantile(latencies, 0.5) ?? 0) / 1000,
      p99: (quantile(latencies, 0.99) ?? 0) / 1000,
      refused: done.reduce((sum, r) => sum + r.refused, 0),
      errors: done.reduce((sum, r) => sum + r.errors, 0),
    };
  } finally {
    masters.forEach((master) => master.disconnect());
    await endChildren(children);
  }
}

/** A master's CPU so far (user + sys of the redis-server process, every thread), seconds. */
async function cpuSeconds(master: Redis): Promise<number> {
  const info = await master.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

function quantile(sorted: number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

function summarize(shards: number, runs: Run[]): ShardsResult {
  const shareLimit = 1.25 / shards;
  const middle = [...runs].sort((a, b) => a.perSec - b.perSec)[Math.floor((runs.length - 1) / 2)];
  return {
    shards,
    reservationsPerSec: Math.round(median(runs.map((r) => r.perSec))),
    cpuPerReservationUs: round(median(runs.map((r) => r.cpuUs))),
    masterShares: (middle?.shares ?? []).map((s) => round(s)),
    shareLimit: round(shareLimit),
    balanced: runs.every((r) => r.shares.every((s) => s <= shareLimit)),
    latencyMs: { p50: round(median(runs.map((r) => r.p50))), p99: round(median(runs.map((r) => r.p99))) },
    refused: runs.reduce((sum, r) => sum + r.refused, 0),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
  };
}

/** The report as a table (terminal or Markdown). */
export function shardsBenchTable(report: ShardsReport): TableData {
  const right = 'right' as const;
  const base = report.results.find((r) => r.shards === 1)?.reservationsPerSec;
  return {
    columns: [
      { header: 'parts = masters' },
      { header: 'reservations/s', align: right },
      { header: '× 1 part', align: right },
      { header: 'Redis CPU µs / reservation', align: right },
      { header: 'share of each master' },
      { header: 'each ≤ 1.25/K' },
      { header: 'p50 / p99 ms', align: right },
      { header: 'refused / errors', align: right },
    ],
    rows: report.results.map((r) => [
      String(r.shards),
      String(r.reservationsPerSec),
      base ? `${round(r.reservationsPerSec / base)}×` : '–',
      String(r.cpuPerReservationUs),
      r.masterShares.map((s) => `${Math.round(s * 100)}%`).join(' · '),
      `${r.balanced ? 'yes' : 'NO'} (≤ ${Math.round(r.shareLimit * 100)}%)`,
      `${r.latencyMs.p50} / ${r.latencyMs.p99}`,
      `${r.refused} / ${r.errors}`,
    ]),
  };
}
