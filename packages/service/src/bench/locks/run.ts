import { writeFileSync } from 'node:fs';
import { RedisServer } from 'lockstock/servers';
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
  log?: (line: string) => void;
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

/**
 * `lockstock bench locks`: lockstock vs node-redlock vs redis-semaphore against one Redis, in one
 * run, with identical ioredis settings per row group. Runs are interleaved across libraries so machine
 * noise hits all of them alike; the report gives medians.
 */
export async function benchLocks(
  options: BenchLocksOptions,
): Promise<{ machine: MachineInfo; results: LockBenchResult[] }> {
  const log = options.log ?? ((line: string) => console.log(line));
  await assertPeersInstalled(options.libraries);
  const server = options.redisUrl ? undefined : await RedisServer.start();
  const url = options.redisUrl ?? (server as RedisServer).url;
  try {
    const machine = await describeMachine(url);
    log(
      `machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}, redis ${machine.redis}`,
    );
    const results: LockBenchResult[] = [];
    for (const client of options.clients) {
      const uncontended = new Map<LibraryName, number[]>();
      const contended = new Map<LibraryName, ContendedResult[]>();
      for (let run = 1; run <= options.runs; run++) {
        for (const library of options.libraries) {
          const adapter = await createAdapter(library, url, client);
          const ops = await runUncontended(adapter, {
            loops: 64,
            durationMs: options.uncontendedMs,
            warmupMs: 500,
          });
          await adapter.close();
          push(uncontended, library, ops);
          log(`run ${run}/${options.runs} [${client}] uncontended ${library}: ${Math.round(ops)} pairs/s`);
        }
        for (const library of options.libraries) {
          const result = await runContended(library, client, url, {
            processes: 4,
            loops: 8,
            durationMs: options.contendedMs,
          });
          push(contended, library, result);
          log(
            `run ${run}/${options.runs} [${client}] contended ${library}: ${Math.round(result.opsPerSec)} CS/s, ` +
              `handoff p99 ${round(result.handoffOtherP99Ms)} ms, max wait ${Math.round(result.maxWaitMs)} ms, ` +
              `violations ${result.violations}`,
          );
        }
      }
      for (const library of options.libraries) {
        results.push({
          library,
          client,
          scenario: 'uncontended',
          opsPerSec: Math.round(median(uncontended.get(library) ?? [])),
          handoffOtherP50Ms: null,
          handoffOtherP99Ms: null,
          maxWaitMs: null,
          violations: 0,
          runs: options.runs,
        });
        const c = contended.get(library) ?? [];
        results.push({
          library,
          client,
          scenario: 'contended',
          opsPerSec: Math.round(median(c.map((r) => r.opsPerSec))),
          handoffOtherP50Ms: round(median(c.map((r) => r.handoffOtherP50Ms))),
          handoffOtherP99Ms: round(median(c.map((r) => r.handoffOtherP99Ms))),
          maxWaitMs: Math.round(median(c.map((r) => r.maxWaitMs))),
          violations: c.reduce((sum, r) => sum + r.violations, 0),
          runs: options.runs,
        });
      }
    }
    log('');
    for (const line of formatTable(results)) log(line);
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

/** A Markdown table with each library's ratio to the best peer of the same client setting. */
export function formatTable(results: LockBenchResult[]): string[] {
  const lines = [
    '| scenario | client | library | ops/s | × best peer | handoff→other p50 / p99 ms | max wait ms | violations |',
    '|---|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of results) {
    const peers = results.filter(
      (p) => p.scenario === r.scenario && p.client === r.client && p.library !== 'lockstock',
    );
    const best = Math.max(...peers.map((p) => p.opsPerSec));
    const ratio = r.library === 'lockstock' && best > 0 ? `${round(r.opsPerSec / best)}×` : '';
    const handoff = r.handoffOtherP50Ms === null ? '' : `${r.handoffOtherP50Ms} / ${r.handoffOtherP99Ms}`;
    lines.push(
      `| ${r.scenario} | ${r.client} | ${r.library} | ${r.opsPerSec} | ${ratio} | ${handoff} | ${r.maxWaitMs ?? ''} | ${r.violations} |`,
    );
  }
  return lines;
}

export { LIBRARIES };
