import { writeFileSync } from 'node:fs';
import { RedisServer } from 'lockstock/servers';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import type { TableData } from '../../support/table.js';
import { describeMachine, type MachineInfo } from '../machine.js';
import { median, round } from '../stats.js';
import { runContended, type ContendedResult } from './contended.js';
import {
  assertPeersInstalled,
  createAdapter,
  LIBRARIES,
  type ClientSetting,
  type LibraryName,
} from './libraries.js';
import { runUncontended } from './uncontended.js';

export interface BenchLocksOptions {
  /** Use this Redis instead of starting a private redis-server. */
  redisUrl?: string;
  runs: number;
  uncontendedMs: number;
  contendedMs: number;
  clients: ClientSetting[];
  libraries: LibraryName[];
  json?: string;
  /** Each scenario × library × run is one step, weighted by its planned duration. */
  progress?: StepProgress;
}

export interface LockBenchResult {
  library: LibraryName;
  client: ClientSetting;
  scenario: 'uncontended' | 'contended';
  opsPerSec: number;
  handoffOtherP50Ms: number | null;
  handoffOtherP99Ms: number | null;
  maxWaitMs: number | null;
  violations: number;
  runs: number;
}

/** Time a contended run needs beyond its duration (forking and connecting 4 processes), for the plan. */
const CONTENDED_SETUP_MS = 1_000;
const UNCONTENDED_WARMUP_MS = 500;

/**
 * `lockstock bench locks`: lockstock vs node-redlock vs redis-semaphore against one Redis, in one
 * run, with identical ioredis settings per row group. Runs are interleaved across libraries so machine
 * noise hits all of them alike; the report gives medians.
 */
export async function benchLocks(
  options: BenchLocksOptions,
): Promise<{ machine: MachineInfo; results: LockBenchResult[] }> {
  const progress = options.progress ?? silentProgress;
  await assertPeersInstalled(options.libraries);
  const server = options.redisUrl ? undefined : await RedisServer.start();
  const url = options.redisUrl ?? (server as RedisServer).url;
  try {
    const machine = await describeMachine(url);
    const uncontended = new Map<string, number[]>();
    const contended = new Map<string, ContendedResult[]>();
    const steps: Array<{ label: string; weight: number; run: () => Promise<string> }> = [];
    for (const client of options.clients) {
      for (let run = 1; run <= options.runs; run++) {
        const of = `run ${run}/${options.runs}`;
        for (const library of options.libraries) {
          steps.push({
            label: `uncontended ${library} [${client}] ${of}`,
            weight: options.uncontendedMs + UNCONTENDED_WARMUP_MS,
            run: async () => {
              const adapter = await createAdapter(library, url, client);
              const ops = await runUncontended(adapter, {
                loops: 64,
                durationMs: options.uncontendedMs,
                warmupMs: UNCONTENDED_WARMUP_MS,
              });
              await adapter.close();
              push(uncontended, `${client}/${library}`, ops);
              return `${of} [${client}] uncontended ${library}: ${Math.round(ops)} pairs/s`;
            },
          });
        }
        for (const library of options.libraries) {
          steps.push({
            label: `contended ${library} [${client}] ${of}`,
            weight: options.contendedMs + CONTENDED_SETUP_MS,
            run: async () => {
              const result = await runContended(library, client, url, {
                processes: 4,
                loops: 8,
                durationMs: options.contendedMs,
              });
              push(contended, `${client}/${library}`, result);
              return (
                `${of} [${client}] contended ${library}: ${Math.round(result.opsPerSec)} CS/s, ` +
                `handoff p99 ${round(result.handoffOtherP99Ms)} ms, max wait ${Math.round(result.maxWaitMs)} ms, ` +
                `violations ${result.violations}`
              );
            },
          });
        }
      }
    }
    progress.begin(steps);
    try {
      for (const step of steps) {
        progress.start();
        progress.finish(await step.run());
      }
    } finally {
      progress.end();
    }
    const results: LockBenchResult[] = options.clients.flatMap((client) =>
      options.libraries.flatMap((library): LockBenchResult[] => {
        const c = contended.get(`${client}/${library}`) ?? [];
        return [
          {
            library,
            client,
            scenario: 'uncontended',
            opsPerSec: Math.round(median(uncontended.get(`${client}/${library}`) ?? [])),
            handoffOtherP50Ms: null,
            handoffOtherP99Ms: null,
            maxWaitMs: null,
            violations: 0,
            runs: options.runs,
          },
          {
            library,
            client,
            scenario: 'contended',
            opsPerSec: Math.round(median(c.map((r) => r.opsPerSec))),
            handoffOtherP50Ms: round(median(c.map((r) => r.handoffOtherP50Ms))),
            handoffOtherP99Ms: round(median(c.map((r) => r.handoffOtherP99Ms))),
            maxWaitMs: Math.round(median(c.map((r) => r.maxWaitMs))),
            violations: c.reduce((sum, r) => sum + r.violations, 0),
            runs: options.runs,
          },
        ];
      }),
    );
    const report = { machine, results };
    if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    await server?.stop();
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  map.set(key, [...(map.get(key) ?? []), value]);
}

/** The report table, each lockstock row with its ratio to the best peer of the same client setting. */
export function lockBenchTable(results: LockBenchResult[]): TableData {
  const right = 'right' as const;
  return {
    columns: [
      { header: 'scenario' },
      { header: 'client' },
      { header: 'library' },
      { header: 'ops/s', align: right },
      { header: '× best peer', align: right },
      { header: 'handoff→other p50 / p99 ms', align: right },
      { header: 'max wait ms', align: right },
      { header: 'violations', align: right },
    ],
    rows: results.map((r) => {
      const peers = results.filter(
        (p) => p.scenario === r.scenario && p.client === r.client && p.library !== 'lockstock',
      );
      const best = Math.max(...peers.map((p) => p.opsPerSec));
      const ratio = r.library === 'lockstock' && best > 0 ? `${round(r.opsPerSec / best)}×` : '';
      const handoff = r.handoffOtherP50Ms === null ? '' : `${r.handoffOtherP50Ms} / ${r.handoffOtherP99Ms}`;
      return [
        r.scenario,
        r.client,
        r.library,
        String(r.opsPerSec),
        ratio,
        handoff,
        String(r.maxWaitMs ?? ''),
        String(r.violations),
      ];
    }),
  };
}

export { LIBRARIES };
