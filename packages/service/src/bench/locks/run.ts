import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import { watchMachine, type BenchConditions } from '../conditions.js';
import { describeMachine, type MachineInfo } from '../machine.js';
import { runContended } from './contended.js';
import type { Workload } from './contended-worker.js';
import { assertPeersInstalled, type AdapterSpec, type Kind, type LibraryName } from './libraries.js';
import { planSubjects, SEMAPHORE_PERMITS, type Scenario, type Subject } from './scenarios.js';
import { BenchServers, type ClientSetting, type Topology } from './targets.js';
import {
  describeContended,
  rowKey,
  runRatios,
  summarizeRow,
  withInstrumentationRatios,
  withRatios,
  type LockBenchResult,
  type Sample,
} from './summary.js';
import { runUncontendedInChild } from './uncontended.js';

export type { LockBenchResult } from './summary.js';

export interface BenchLocksOptions {
  /** Use this Redis for the `single` rows instead of starting a private redis-server. */
  redisUrl?: string;
  runs: number;
  uncontendedMs: number;
  contendedMs: number;
  clients: ClientSetting[];
  libraries: LibraryName[];
  scenarios: Scenario[];
  /** Where to measure (each scenario's rows on these topologies only). @default every topology */
  topologies?: Topology[];
  /** lockstock's kinds to measure; the peers' counterparts come with them. */
  kinds: Kind[];
  /**
   * The instrumentation scenario's `base` row: this checkout's lockstock build (another clone or
   * worktree, built), with no subscriber; the scenario's ratios are then against it. @default none
   */
  base?: string;
  /**
   * Run each row once first, not counted (false: no warm-up round — cold figures, for smoke tests
   * that check what is measured, not how fast). @default true
   */
  warmup?: boolean;
  json?: string;
  /** Each row × run is one step, weighted by its planned duration. */
  progress?: StepProgress;
}

/** Time a contended run needs beyond its duration (forking and connecting 4 processes), for the plan. */
const CONTENDED_SETUP_MS = 1_000;
const UNCONTENDED_WARMUP_MS = 500;
/** The longest a row's warm-up round (run once before the measured runs, not counted) takes. */
const WARMUP_ROUND_MS = 1_000;
const WORKLOADS: Record<Exclude<Scenario, 'uncontended' | 'instrumentation'>, Workload> = {
  contended: 'exclusive',
  'read-write': 'read-write',
  semaphore: 'semaphore',
};

/**
 * `lockstock bench locks`: lockstock's lock kinds against node-redlock, redis-semaphore and
 * redlock-universal, in one run, every library with the same ioredis settings. Runs are interleaved
 * across libraries (and the order rotates from run to run) so machine noise hits all of them alike;
 * the report gives medians.
 */
export async function benchLocks(options: BenchLocksOptions): Promise<{
  machine: MachineInfo;
  conditions: BenchConditions;
  warnings: string[];
  results: LockBenchResult[];
}> {
  const progress = options.progress ?? silentProgress;
  if (options.base) assertBaseBuilt(options.base);
  const watch = watchMachine();
  const subjects = planSubjects(
    options.scenarios,
    options.kinds,
    options.libraries,
    options.topologies,
    options.base ? ['base', 'none', 'holders', 'channels', 'otel'] : ['none', 'holders', 'channels', 'otel'],
  );
  await assertPeersInstalled([...new Set(subjects.map((s) => s.library))]);
  // Contended sections keep their counter in the single Redis, whatever store holds the lock.
  const contended = subjects.some((s) => s.scenario !== 'uncontended');
  const topologies = new Set(subjects.map((s) => s.topology));
  if (contended) topologies.add('single');
  const servers = await BenchServers.start(topologies, options.redisUrl);
  try {
    const machine = await describeMachine(servers.anyUrl);
    const samples = new Map<string, Sample[]>();
    const warmupMs = Math.min(UNCONTENDED_WARMUP_MS, options.uncontendedMs); // short runs, short warmups
    const steps: Array<{ label: string; weight: number; run: () => Promise<string> }> = [];
    for (const client of options.clients) {
      // Run 0 is each row's warm-up round (servers, connections, JIT, page cache), not counted: a
      // cold first row measured a fraction of its rerun.
      for (let run = options.warmup === false ? 1 : 0; run <= options.runs; run++) {
        const warmup = run === 0;
        const of = warmup ? 'warm-up' : `run ${run}/${options.runs}`;
        const uncontendedMs = warmup
          ? Math.min(options.uncontendedMs, WARMUP_ROUND_MS)
          : options.uncontendedMs;
        const contendedMs = warmup ? Math.min(options.contendedMs, WARMUP_ROUND_MS) : options.contendedMs;
        for (const subject of rotated(subjects, Math.max(0, run - 1))) {
          const name =
            `${subject.scenario} ${subject.library} ${subject.kind}/${subject.topology}` +
            (subject.instrumentation ? ` ${subject.instrumentation}` : '');
          const spec: AdapterSpec = {
            library: subject.library,
            kind: subject.kind,
            target: servers.target(subject.topology),
            setting: client,
            permits: SEMAPHORE_PERMITS,
          };
          const record = (sample: Sample) => {
            if (warmup) return; // the warm-up round is not counted
            samples.set(rowKey(subject, client), [...(samples.get(rowKey(subject, client)) ?? []), sample]);
          };
          if (subject.scenario === 'uncontended' || subject.scenario === 'instrumentation') {
            steps.push({
              label: `${name} [${client}] ${of}`,
              weight: uncontendedMs + warmupMs,
              run: async () => {
                const result = await runUncontendedInChild({
                  spec,
                  options: {
                    loops: 64,
                    durationMs: uncontendedMs,
                    warmupMs,
                    access: subject.kind === 'read-write' ? 'read' : 'write',
                  },
                  ...(subject.instrumentation
                    ? { instrumentation: { variant: subject.instrumentation, base: options.base } }
                    : {}),
                });
                record({ uncontended: result });
                return `${of} [${client}] ${name}: ${Math.round(result.opsPerSec)} pairs/s`;
              },
            });
          } else {
            const workload = WORKLOADS[subject.scenario];
            steps.push({
              label: `${name} [${client}] ${of}`,
              weight: contendedMs + CONTENDED_SETUP_MS,
              run: async () => {
                const counter = servers.target('single');
                if (counter.topology !== 'single') throw new Error('no Redis for the counter');
                const result = await runContended(
                  spec,
                  { workload, processes: 4, loops: 8, durationMs: contendedMs },
                  counter.url,
                );
                record({ contended: result });
                return `${of} [${client}] ${name}: ${describeContended(result)}`;
              },
            });
          }
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
    const rows = options.clients.flatMap((client) =>
      subjects.map((subject) => summarizeRow(subject, client, samples.get(rowKey(subject, client)) ?? [])),
    );
    const results = withInstrumentationRatios(withRatios(rows, samples), samples);
    const { conditions, warnings } = watch.finish(runRatios(results));
    const report = { machine, conditions, warnings, results };
    if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    await servers.stop();
  }
}

/**
 * The subjects in plan order, each group of rows compared with each other (same scenario and
 * topology) rotated by `by`, so no library always runs first or last in its group.
 */
function rotated(subjects: readonly Subject[], by: number): Subject[] {
  const groups = new Map<string, Subject[]>();
  for (const s of subjects) {
    const key = `${s.scenario}/${s.topology}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  return [...groups.values()].flatMap((group) => {
    const shift = by % group.length;
    return [...group.slice(shift), ...group.slice(0, shift)];
  });
}

/** Fails before anything starts when `--base` has no lockstock build. */
function assertBaseBuilt(checkout: string): void {
  const entry = join(checkout, 'packages', 'lockstock', 'dist', 'index.js');
  if (!existsSync(entry))
    throw new Error(
      `--base ${checkout}: no ${entry}; build it there first (node scripts/build.mjs packages/lockstock)`,
    );
}
