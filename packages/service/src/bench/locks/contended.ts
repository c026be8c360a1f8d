import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { nsToMs, percentile } from '../stats.js';
import type { SectionTimes, WorkerConfig, WorkerReport } from './contended-worker.js';
import type { ClientSetting, LibraryName } from './libraries.js';

export interface ContendedOptions {
  processes: number;
  loops: number;
  durationMs: number;
}

export interface ContendedResult {
  opsPerSec: number;
  handoffOtherP50Ms: number;
  handoffOtherP99Ms: number;
  maxWaitMs: number;
  violations: number;
}

const workerPath = fileURLToPath(new URL('./contended-worker.js', import.meta.url));

function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type?: string }) => {
      if (message?.type !== type) return;
      child.off('message', onMessage);
      resolve(message as T);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`benchmark worker exited with code ${code}`)));
  });
}

/**
 * Scenario (b): `processes` × `loops` contenders on one lock, hold = GET + 1 ms + SET. All processes
 * pass a start barrier first. Everything is derived from what the workers recorded plus the counter.
 */
export async function runContended(
  library: LibraryName,
  setting: ClientSetting,
  url: string,
  options: ContendedOptions,
): Promise<ContendedResult> {
  const run = randomBytes(4).toString('hex');
  const config: WorkerConfig = {
    library,
    setting,
    url,
    lockName: `bench-con-${run}`,
    counterKey: `bench-con-${run}-counter`,
    loops: options.loops,
    durationMs: options.durationMs,
  };
  const children = Array.from({ length: options.processes }, () =>
    fork(workerPath, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  try {
    const ready = children.map((child) => nextMessage(child, 'ready'));
    for (const child of children) child.send(config);
    await Promise.all(ready);
    const reports = children.map((child) => nextMessage<WorkerReport>(child, 'done'));
    for (const child of children) child.send({ type: 'go' });
    const done = await Promise.all(reports);
    const redis = new Redis(url);
    const counter = Number((await redis.get(config.counterKey)) ?? 0);
    redis.disconnect();
    return summarize(done, counter, options.durationMs);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
  }
}

export function summarize(reports: WorkerReport[], counter: number, durationMs: number): ContendedResult {
  const sections = reports
    .flatMap((r) => r.sections)
    .map((s: SectionTimes) => ({
      loop: s.loop,
      invokedAt: BigInt(s.invokedAt),
      acquiredAt: BigInt(s.acquiredAt),
      releasingAt: BigInt(s.releasingAt),
    }))
    .sort((a, b) => (a.acquiredAt < b.acquiredAt ? -1 : a.acquiredAt > b.acquiredAt ? 1 : 0));

  let overlaps = 0;
  let latestEnd = -1n;
  const handoffs: number[] = [];
  let maxWait = 0;
  for (let i = 0; i < sections.length; i++) {
    const s = sections[i]!;
    if (s.acquiredAt < latestEnd) overlaps++;
    if (s.releasingAt > latestEnd) latestEnd = s.releasingAt;
    maxWait = Math.max(maxWait, nsToMs(s.acquiredAt - s.invokedAt));
    const previous = sections[i - 1];
    if (previous && previous.loop !== s.loop) handoffs.push(nsToMs(s.acquiredAt - previous.releasingAt));
  }
  // A loop still waiting at the end has waited at least this long: starvation must show.
  for (const report of reports) {
    for (const [, since] of report.waiting)
      maxWait = Math.max(maxWait, nsToMs(BigInt(report.endedAt) - BigInt(since)));
  }
  handoffs.sort((a, b) => a - b);
  return {
    opsPerSec: (sections.length * 1000) / durationMs,
    handoffOtherP50Ms: percentile(handoffs, 50),
    handoffOtherP99Ms: percentile(handoffs, 99),
    maxWaitMs: maxWait,
    // Overlapping sections plus updates lost from the counter: both mean mutual exclusion failed.
    violations: overlaps + Math.abs(sections.length - counter),
  };
}
