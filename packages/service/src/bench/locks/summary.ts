import type { RunRatios } from '../conditions.js';
import { median, round } from '../stats.js';
import type { ContendedResult } from './contended.js';
import type { Instrumentation } from './instrumentation.js';
import { isPeer, PEER_KIND, type Kind, type LibraryName } from './libraries.js';
import type { Scenario, Subject } from './scenarios.js';
import type { ClientSetting, Topology } from './targets.js';
import type { UncontendedResult } from './uncontended.js';

// What `lockstock bench locks` makes of its samples (run.ts runs them): a row per subject and
// client, its medians, and its ratios to the best peer, to the floor and to the un-instrumented row.

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

export type Sample = { uncontended: UncontendedResult } | { contended: ContendedResult };

export const rowKey = (
  s: Omit<Subject, 'instrumentation'> & { instrumentation?: Instrumentation | null },
  client: ClientSetting,
) => `${s.scenario}/${s.topology}/${client}/${s.library}/${s.kind}/${s.instrumentation ?? ''}`;

/** Per lockstock row with a peer, its ratio in each run: the rows whose runs may disagree. */
export function runRatios(results: readonly LockBenchResult[]): RunRatios[] {
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

export function describeContended(r: ContendedResult): string {
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

export function summarizeRow(subject: Subject, client: ClientSetting, samples: Sample[]): LockBenchResult {
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
export function withRatios(
  results: LockBenchResult[],
  samples: ReadonlyMap<string, Sample[]>,
): LockBenchResult[] {
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
export function withInstrumentationRatios(
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
