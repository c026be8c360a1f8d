import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import { watchMachine, type BenchConditions, type RunRatios } from '../conditions.js';
import { describeMachine, type MachineInfo } from '../machine.js';
import { median, round } from '../stats.js';
import { runContended, type ContendedResult } from './contended.js';
import type { Instrumentation } from './instrumentation.js';
import type { Workload } from './contended-worker.js';
import {
  assertPeersInstalled,
  isPeer,
  PEER_KIND,
  type AdapterSpec,
  type Kind,
  type LibraryName,
} from './libraries.js';
import { planSubjects, SEMAPHORE_PERMITS, type Scenario, type Subject } from './scenarios.js';
import { BenchServers, type ClientSetting, type Topology } from './targets.js';
import { runUncontendedInChild, type UncontendedResult } from './uncontended.js';

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

export interface LockBenchResult {
  library: LibraryName;
  /** The primitive the library used (a peer's mutex stands in for lockstock's fair and read-write). */
  kind: Kind;
  topology: Topology;
  client: ClientSetting;
  scenario: Scenario;
  /** Medians: acquire + release pairs/s (uncontended), sections/s (reads/s in read-write). */
  opsPerSec: number;
  /** lockstock rows: opsPerSec over the best peer's of the same scenario, topology, client and kind. */
  timesBestPeer: number | null;
  /** lockstock rows: the same ratio in each run (that run's best peer), in run order. */
  timesBestPeerByRun: number[] | null;
  bestPeer: LibraryName | null;
  /** lockstock rows: opsPerSec over the floor's (raw commands) of the same topology and client. */
  timesFloor: number | null;
  writesPerSec: number | null;
  handoffOtherP50Ms: number | null;
  handoffOtherP99Ms: number | null;
  maxWaitMs: number | null;
  writerMaxWaitMs: number | null;
  /** The instrumentation scenario's rows: what was attached (null in the other scenarios). */
  instrumentation: Instrumentation | null;
  /**
   * Instrumentation rows: opsPerSec over the un-instrumented row's of the same run (`base` if
   * measured, else `none`), the median of the per-run ratios, and those ratios in run order.
   */
  timesUninstrumented: number | null;
  timesUninstrumentedByRun: number[] | null;
  /** Instrumentation rows: the client's CPU per pair over the un-instrumented row's, likewise. */
  cpuTimesUninstrumented: number | null;
  /** Summed over the runs. */
  violations: number;
  runs: number;
  /**
   * Uncontended rows: medians of the CPU one acquire + release pair cost the benchmark process and the
   * Redis servers, µs (null in the other scenarios).
   */
  clientCpuUsPerOp: number | null;
  redisCpuUsPerOp: number | null;
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

type Sample = { uncontended: UncontendedResult } | { contended: ContendedResult };

const rowKey = (
  s: Omit<Subject, 'instrumentation'> & { instrumentation?: Instrumentation | null },
  client: ClientSetting,
) => `${s.scenario}/${s.topology}/${client}/${s.library}/${s.kind}/${s.instrumentation ?? ''}`;

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

/** Per lockstock row with a peer, its ratio in each run: the rows whose runs may disagree. */
function runRatios(results: readonly LockBenchResult[]): RunRatios[] {
  return results.flatMap((r): RunRatios[] => {
    if (r.timesUninstrumentedByRun && r.timesUninstrumentedByRun.length > 1)
      return [
        {
          label: `${r.scenario} ${r.instrumentation} [${r.client}] × uninstrumented`,
          ratios: r.timesUninstrumentedByRun,
        },
      ];
    return r.timesBestPeerByRun && r.timesBestPeerByRun.length > 1
      ? [
          {
            label: `${r.scenario} ${r.kind}/${r.topology} [${r.client}] × best peer (${r.bestPeer})`,
            ratios: r.timesBestPeerByRun,
          },
        ]
      : [];
  });
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

function describeContended(r: ContendedResult): string {
  const parts =
    r.writesPerSec === null
      ? [`${Math.round(r.opsPerSec)} CS/s`]
      : [`${Math.round(r.opsPerSec)} reads/s`, `${Math.round(r.writesPerSec)} writes/s`];
  if (r.handoffOtherP99Ms !== null) parts.push(`handoff p99 ${round(r.handoffOtherP99Ms)} ms`);
  parts.push(`max wait ${Math.round(r.maxWaitMs)} ms`);
  if (r.writerMaxWaitMs !== null) parts.push(`writer max wait ${Math.round(r.writerMaxWaitMs)} ms`);
  parts.push(`violations ${r.violations}`);
  return parts.join(', ');
}

function summarizeRow(subject: Subject, client: ClientSetting, samples: Sample[]): LockBenchResult {
  const base = {
    library: subject.library,
    kind: subject.kind,
    topology: subject.topology,
    client,
    scenario: subject.scenario,
    instrumentation: subject.instrumentation ?? null,
    timesUninstrumented: null,
    timesUninstrumentedByRun: null,
    cpuTimesUninstrumented: null,
    timesBestPeer: null,
    timesBestPeerByRun: null,
    bestPeer: null,
    timesFloor: null,
    runs: samples.length,
    clientCpuUsPerOp: null,
    redisCpuUsPerOp: null,
  };
  const contended = samples.flatMap((s) => ('contended' in s ? [s.contended] : []));
  if (contended.length === 0) {
    const runs = samples.flatMap((s) => ('uncontended' in s ? [s.uncontended] : []));
    const redis = runs.map((r) => r.redisCpuUs);
    return {
      ...base,
      opsPerSec: Math.round(median(runs.map((r) => r.opsPerSec))),
      clientCpuUsPerOp: round(median(runs.map((r) => r.clientCpuUs)), 1),
      redisCpuUsPerOp: redis.every((us): us is number => us !== null) ? round(median(redis), 1) : null,
      writesPerSec: null,
      handoffOtherP50Ms: null,
      handoffOtherP99Ms: null,
      maxWaitMs: null,
      writerMaxWaitMs: null,
      violations: 0,
    };
  }
  const med = (pick: (r: ContendedResult) => number | null, digits = 0): number | null => {
    const values = contended.map(pick).filter((v): v is number => v !== null);
    return values.length === 0 ? null : round(median(values), digits);
  };
  return {
    ...base,
    opsPerSec: med((r) => r.opsPerSec) ?? 0,
    writesPerSec: med((r) => r.writesPerSec),
    handoffOtherP50Ms: med((r) => r.handoffOtherP50Ms, 2),
    handoffOtherP99Ms: med((r) => r.handoffOtherP99Ms, 2),
    maxWaitMs: med((r) => r.maxWaitMs),
    writerMaxWaitMs: med((r) => r.writerMaxWaitMs),
    violations: contended.reduce((sum, r) => sum + r.violations, 0),
  };
}

/**
 * Each lockstock row against the best peer row of its scenario, topology, client and PEER_KIND, and
 * against the floor (raw commands) of its scenario, topology and client.
 */
function withRatios(results: LockBenchResult[], samples: ReadonlyMap<string, Sample[]>): LockBenchResult[] {
  const perRun = (r: LockBenchResult) =>
    (samples.get(rowKey(r, r.client)) ?? []).map((s) =>
      'uncontended' in s ? s.uncontended.opsPerSec : s.contended.opsPerSec,
    );
  return results.map((r) => {
    if (r.library !== 'lockstock') return r;
    const same = (p: LockBenchResult) =>
      p.scenario === r.scenario && p.topology === r.topology && p.client === r.client;
    const peers = results.filter((p) => isPeer(p.library) && same(p) && p.kind === PEER_KIND[r.kind]);
    const best = peers.reduce<LockBenchResult | undefined>(
      (top, p) => (top === undefined || p.opsPerSec > top.opsPerSec ? p : top),
      undefined,
    );
    const floorRow = results.find((p) => p.library === 'floor' && same(p));
    // Run i of this row against the best of the peers' runs i (the runs are interleaved).
    const mine = perRun(r);
    const theirs = peers.map(perRun);
    const byRun = mine.map((ops, i) => {
      const top = Math.max(0, ...theirs.map((runs) => runs[i] ?? 0));
      return top > 0 ? round(ops / top) : NaN;
    });
    return {
      ...r,
      ...(best && best.opsPerSec > 0
        ? {
            timesBestPeer: round(r.opsPerSec / best.opsPerSec),
            timesBestPeerByRun: byRun.every(Number.isFinite) ? byRun : null,
            bestPeer: best.library,
          }
        : {}),
      ...(floorRow && floorRow.opsPerSec > 0 ? { timesFloor: round(r.opsPerSec / floorRow.opsPerSec) } : {}),
    };
  });
}

/**
 * Each instrumentation row against the un-instrumented row (`base` when measured, else `none`) of the
 * same client, run by run — the variants of one run are measured moments apart, in rotating order —
 * and the median of those ratios: on a shared machine one run's load hits the variants of that run
 * alike, so the ratio within a run moves less than either rate.
 */
function withInstrumentationRatios(
  results: LockBenchResult[],
  samples: ReadonlyMap<string, Sample[]>,
): LockBenchResult[] {
  const runs = (r: LockBenchResult) =>
    (samples.get(rowKey(r, r.client)) ?? []).flatMap((s) => ('uncontended' in s ? [s.uncontended] : []));
  return results.map((r) => {
    if (r.instrumentation === null) return r;
    const same = (p: LockBenchResult) => p.scenario === r.scenario && p.client === r.client;
    const reference =
      results.find((p) => same(p) && p.instrumentation === 'base') ??
      results.find((p) => same(p) && p.instrumentation === 'none');
    if (!reference) return r;
    const theirs = runs(reference);
    const mine = runs(r);
    const byRun = mine.map((run, i) => round(run.opsPerSec / (theirs[i]?.opsPerSec ?? NaN), 3));
    const cpuByRun = mine.map((run, i) => run.clientCpuUs / (theirs[i]?.clientCpuUs ?? NaN));
    if (!byRun.every(Number.isFinite) || !cpuByRun.every(Number.isFinite)) return r;
    return {
      ...r,
      timesUninstrumented: round(median(byRun), 3),
      timesUninstrumentedByRun: byRun,
      cpuTimesUninstrumented: round(median(cpuByRun), 3),
    };
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
