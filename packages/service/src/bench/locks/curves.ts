import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { silentProgress, type StepProgress } from '../../support/progress.js';
import { describeMachine, type MachineInfo } from '../machine.js';
import { endChildren, nextMessage } from './children.js';
import { runContended } from './contended.js';
import type { CurvesWorkerConfig } from './curves-worker.js';
import { BenchServers, type Target } from './targets.js';

/** The stores the curves are drawn on: Redis (one server) and etcd (one member). */
export const CURVE_STORES = ['single', 'etcd'] as const;
export type CurveStore = (typeof CURVE_STORES)[number];
export const STORE_NAMES: Record<CurveStore, string> = { single: 'Redis', etcd: 'etcd' };

export interface CurvesOptions {
  stores: readonly CurveStore[];
  /** Callers contending for one lock, per point. @default 1, 10, 100, 1000 */
  waiters?: readonly number[];
  /**
   * Locks held at once by one client, per point. @default 1, 100, 10000, 100000 (etcd: up to 10000,
   * ETCD_MAX_HOLDS)
   */
  holds?: readonly number[];
  /** Callers waiting on one held lock, per memory point. @default 1, 100, 10000 */
  waiting?: readonly number[];
  /** Each contention point's duration. */
  durationMs: number;
  progress?: StepProgress;
  json?: string;
}

/** One contention point: `waiters` callers on one lockstock mutex, each section ~1 ms. */
export interface ContentionPoint {
  store: CurveStore;
  waiters: number;
  opsPerSec: number;
  /** Release to the next acquire by another caller, p99 (null: one caller, no hand-off). */
  handoffP99Ms: number | null;
  maxWaitMs: number;
  violations: number;
}

/** One memory point: `n` holds (or waiters) in one client, per hold (waiter). */
export interface MemoryPoint {
  store: CurveStore;
  what: 'hold' | 'waiter';
  n: number;
  /** The client's heap after a full GC, bytes per hold (waiter). */
  clientBytes: number;
  /**
   * The store's own figure, bytes per hold (waiter): Redis's used_memory; etcd's key-value database in
   * use (etcd_mvcc_db_total_size_in_use_in_bytes: what its keys take, in 4 KiB pages).
   */
  storeBytes: number;
  /** etcd only: its Go heap in use (go_memstats_heap_inuse_bytes), per hold; moves with its GC. */
  storeHeapBytes?: number;
  /** How long taking the holds (or queuing the waiters) took, ms. */
  ms: number;
}

export interface CurvesReport {
  machine: MachineInfo;
  durationMs: number;
  contention: ContentionPoint[];
  memory: MemoryPoint[];
}

/**
 * The most holds measured on etcd by default: its acquisitions ran at ~280/s on this machine (load
 * average ~12): 100,000 took 6 minutes to take and as long to release, three times the rest of the
 * curves together.
 */
export const ETCD_MAX_HOLDS = 10_000;

const workerPath = fileURLToPath(new URL('./curves-worker.js', import.meta.url));

/**
 * `bench locks --scenarios curves`: how cost grows. For each store, lockstock's mutex under 1 → 1,000
 * contenders (runContended: sections/s, hand-off p99, longest wait), and memory per hold as one client
 * holds 1 → 100,000 locks and per waiter as 1 → 10,000 callers wait on one held lock (the client's
 * heap in a fresh child process, and the store's own figure).
 */
export async function benchCurves(options: CurvesOptions): Promise<CurvesReport> {
  const progress = options.progress ?? silentProgress;
  const waiters = options.waiters ?? [1, 10, 100, 1_000];
  const holds = options.holds ?? [1, 100, 10_000, 100_000];
  const waiting = options.waiting ?? [1, 100, 10_000];
  const servers = await BenchServers.start(new Set(['single', ...options.stores]));
  try {
    const counter = servers.target('single');
    if (counter.topology !== 'single') throw new Error('no Redis for the counter');
    const contention: ContentionPoint[] = [];
    const memory: MemoryPoint[] = [];
    const steps: Array<{ label: string; weight: number; run: () => Promise<string> }> = [];
    for (const store of options.stores) {
      const target = servers.target(store);
      const name = STORE_NAMES[store];
      for (const n of waiters) {
        steps.push({
          label: `${name}: ${n} contending`,
          weight: options.durationMs + 1_000,
          run: async () => {
            const processes = Math.min(4, Math.ceil(n / 5));
            const spec = {
              library: 'lockstock',
              kind: 'mutex',
              target,
              setting: 'default',
              permits: 1,
            } as const;
            const r = await runContended(
              spec,
              {
                workload: 'exclusive',
                processes,
                loops: Math.ceil(n / processes),
                durationMs: options.durationMs,
              },
              counter.url,
            );
            contention.push({
              store,
              waiters: processes * Math.ceil(n / processes),
              opsPerSec: r.opsPerSec,
              handoffP99Ms: r.handoffOtherP99Ms,
              maxWaitMs: r.maxWaitMs,
              violations: r.violations,
            });
            return `${name}, ${n} contending: ${Math.round(r.opsPerSec)} sections/s, max wait ${Math.round(r.maxWaitMs)} ms`;
          },
        });
      }
      for (const [what, counts] of [
        ['hold', options.holds ?? holds.filter((n) => store !== 'etcd' || n <= ETCD_MAX_HOLDS)],
        ['waiter', waiting],
      ] as const) {
        for (const n of counts) {
          steps.push({
            label: `${name}: ${n} ${what}s`,
            weight: 1_000 + n / 20,
            run: async () => {
              const point = await measureMemory(target, store, what, n);
              memory.push(point);
              return `${name}, ${n} ${what}s: ${Math.round(point.clientBytes)} B client, ${Math.round(point.storeBytes)} B store per ${what}`;
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
    const report = {
      machine: await describeMachine(counter.url),
      durationMs: options.durationMs,
      contention,
      memory,
    };
    if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    await servers.stop();
  }
}

/** The store's own memory figures now, bytes. */
async function storeMemory(target: Target): Promise<{ bytes: number; heap?: number }> {
  if (target.topology === 'single') {
    const redis = new Redis(target.url);
    try {
      const info = await redis.info('memory');
      return { bytes: metric(info, /^used_memory:(\d+)/m) };
    } finally {
      redis.disconnect();
    }
  }
  if (target.topology === 'etcd') {
    const text = await (await fetch(`${target.endpoint}/metrics`)).text();
    return {
      bytes: metric(text, /^etcd_mvcc_db_total_size_in_use_in_bytes ([\d.e+]+)/m),
      heap: metric(text, /^go_memstats_heap_inuse_bytes ([\d.e+]+)/m),
    };
  }
  throw new Error(`no memory figure for ${target.topology}`);
}

function metric(text: string, pattern: RegExp): number {
  const match = pattern.exec(text);
  if (!match?.[1]) throw new Error(`memory figure ${String(pattern)} not found`);
  return Number(match[1]);
}

/** One memory point, in a fresh child process (its heap holds nothing else). */
async function measureMemory(
  target: Target,
  store: CurveStore,
  what: 'hold' | 'waiter',
  n: number,
): Promise<MemoryPoint> {
  const child = fork(workerPath, [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: ['--expose-gc', '--max-old-space-size=2048'],
  });
  try {
    const ready = nextMessage<{ heap: number }>(child, 'ready');
    const config: CurvesWorkerConfig = {
      target,
      mode: what === 'hold' ? 'holds' : 'waiters',
      n,
      run: randomBytes(4).toString('hex'),
    };
    child.send(config);
    const before = await ready;
    const storeBefore = await storeMemory(target);
    const measured = nextMessage<{ heap: number; ms: number }>(child, 'measured');
    child.send({ type: 'go' });
    const after = await measured;
    const storeAfter = await storeMemory(target);
    const ended = nextMessage(child, 'ended');
    child.send({ type: 'end' });
    await ended;
    return {
      store,
      what,
      n,
      clientBytes: (after.heap - before.heap) / n,
      storeBytes: (storeAfter.bytes - storeBefore.bytes) / n,
      ...(storeAfter.heap !== undefined && storeBefore.heap !== undefined
        ? { storeHeapBytes: (storeAfter.heap - storeBefore.heap) / n }
        : {}),
      ms: after.ms,
    };
  } finally {
    await endChildren([child]);
  }
}
