import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { nsToMs, percentile } from '../stats.js';
import { endChildren, nextMessage } from './children.js';
import type { Section, WorkerConfig, WorkerReport, Workload } from './contended-worker.js';
import type { AdapterSpec } from './libraries.js';

export interface ContendedOptions {
  workload: Workload;
  processes: number;
  loops: number;
  durationMs: number;
}

export interface ContendedResult {
  /** Sections per second; read sections only in the read-write workload. */
  opsPerSec: number;
  /** Write sections per second (read-write workload), else null. */
  writesPerSec: number | null;
  /** The gap between a release and the next acquire by a different loop (exclusive locks), else null. */
  handoffOtherP50Ms: number | null;
  handoffOtherP99Ms: number | null;
  /** The longest any loop waited, counting waits still open at the end. */
  maxWaitMs: number;
  /** The longest a writing loop waited (read-write workload), else null. */
  writerMaxWaitMs: number | null;
  /** Sections that entered when they must not have, lost updates, torn reads, holders over the bound. */
  violations: number;
}

const workerPath = fileURLToPath(new URL('./contended-worker.js', import.meta.url));

/**
 * `processes` × `loops` contenders on one lock, each section ~1 ms (see contended-worker.ts). All
 * processes pass a start barrier first. In the read-write workload the first loop of the first
 * process writes and every other loop reads. Everything is derived from what the workers recorded
 * plus the counter.
 */
export async function runContended(
  spec: AdapterSpec,
  options: ContendedOptions,
  /** The Redis the sections' counter lives in (whatever store holds the lock). */
  counterUrl: string,
): Promise<ContendedResult> {
  const run = randomBytes(4).toString('hex');
  const config = (writers: number): WorkerConfig => ({
    adapter: spec,
    counterUrl,
    workload: options.workload,
    lockName: `bench-con-${run}`,
    counterKey: `bench-con-${run}-counter`,
    loops: options.loops,
    writers,
    durationMs: options.durationMs,
  });
  const children = Array.from({ length: options.processes }, () =>
    fork(workerPath, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' }),
  );
  try {
    const ready = children.map((child) => nextMessage(child, 'ready'));
    children.forEach((child, i) => child.send(config(i === 0 ? 1 : 0)));
    await Promise.all(ready);
    const reports = children.map((child) => nextMessage<WorkerReport>(child, 'done'));
    for (const child of children) child.send({ type: 'go' });
    const done = await Promise.all(reports);
    const redis = new Redis(counterUrl);
    const counter = Number((await redis.get(config(0).counterKey)) ?? 0);
    redis.disconnect();
    return summarize(options.workload, done, counter, options.durationMs, spec.permits);
  } finally {
    await endChildren(children);
  }
}

/**
 * The figures of one run. `counter` is the counter's final value: the number of write sections
 * (exclusive, read-write), or the holders left inside (semaphore: 0).
 */
export function summarize(
  workload: Workload,
  reports: WorkerReport[],
  counter: number,
  durationMs: number,
  permits: number,
): ContendedResult {
  const sections = reports
    .flatMap((r) => r.sections)
    .sort((a, b) => (a.acquiredAt < b.acquiredAt ? -1 : a.acquiredAt > b.acquiredAt ? 1 : 0));
  const writes = sections.filter((s) => s.write).length;
  const reads = sections.length - writes;

  let maxWait = 0;
  let writerMaxWait = 0;
  const waited = (ms: number, write: boolean) => {
    maxWait = Math.max(maxWait, ms);
    if (write) writerMaxWait = Math.max(writerMaxWait, ms);
  };
  for (const s of sections) waited(nsToMs(s.acquiredAt - s.invokedAt), s.write);
  // A loop still waiting at the end has waited at least this long: starvation must show.
  for (const report of reports)
    for (const w of report.waiting) waited(nsToMs(report.endedAt - w.since), w.write);

  const capacity = workload === 'semaphore' ? permits : 1;
  let violations = entriesOverBound(sections, capacity);
  if (workload === 'semaphore') {
    violations += sections.filter((s) => s.seen > permits).length + Math.abs(counter);
  } else {
    // Lost counter updates, and reads that saw the counter move under them.
    violations += Math.abs(writes - counter) + sections.filter((s) => !s.write && s.seen !== 0).length;
  }

  const handoffs = workload === 'exclusive' ? handoffsToOthers(sections) : undefined;
  return {
    opsPerSec: ((workload === 'read-write' ? reads : sections.length) * 1000) / durationMs,
    writesPerSec: workload === 'read-write' ? (writes * 1000) / durationMs : null,
    handoffOtherP50Ms: handoffs ? percentile(handoffs, 50) : null,
    handoffOtherP99Ms: handoffs ? percentile(handoffs, 99) : null,
    maxWaitMs: maxWait,
    writerMaxWaitMs: workload === 'read-write' ? writerMaxWait : null,
    violations,
  };
}

/**
 * Sections that entered while they must not have (from the recorded times): a write while `capacity`
 * writes or any read were inside, a read while a write was inside. The recorded times lie within the
 * real holds, so a correct lock never shows one.
 */
export function entriesOverBound(sections: readonly Section[], capacity: number): number {
  const events = sections.flatMap((s) => [
    { at: s.acquiredAt, enter: true, write: s.write },
    { at: s.releasingAt, enter: false, write: s.write },
  ]);
  // By time; at a tie the exit first (touching sections do not overlap).
  events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : Number(a.enter) - Number(b.enter)));
  let writers = 0;
  let readers = 0;
  let over = 0;
  for (const e of events) {
    const delta = e.enter ? 1 : -1;
    if (e.enter && (e.write ? writers >= capacity || readers > 0 : writers > 0)) over++;
    if (e.write) writers += delta;
    else readers += delta;
  }
  return over;
}

/** Gaps between one loop's release and the next loop's acquire, in ms, sorted. */
function handoffsToOthers(sorted: readonly Section[]): number[] {
  const gaps: number[] = [];
  for (let i = 1; i < sorted.length; i++) {
    const [previous, s] = [sorted[i - 1] as Section, sorted[i] as Section];
    if (previous.loop !== s.loop) gaps.push(nsToMs(s.acquiredAt - previous.releasingAt));
  }
  return gaps.sort((a, b) => a - b);
}
