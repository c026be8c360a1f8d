import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { endChildren, nextMessage } from './children.js';
import type { Instrumentation } from './instrumentation.js';
import type { Access, AdapterSpec, LockAdapter } from './libraries.js';

export interface UncontendedOptions {
  loops: number;
  durationMs: number;
  warmupMs: number;
  /** `read` takes the read lock of a read-write lock. @default 'write' */
  access?: Access;
  /** CPU time the row's Redis servers have used so far, µs (none: not measured). */
  redisCpuUs?: () => Promise<number>;
}

/** What a child process measures: one row's sample (plain data, sent over IPC). */
export interface UncontendedSample {
  spec: AdapterSpec;
  options: Omit<UncontendedOptions, 'redisCpuUs'>;
  /** The instrumentation scenario's variant (instrumentation.ts), and the `base` variant's checkout. */
  instrumentation?: { variant: Instrumentation; base?: string };
}

const workerPath = fileURLToPath(new URL('./uncontended-worker.js', import.meta.url));

/** `runUncontended` for `sample.spec` in a fresh process (see uncontended-worker.ts), Redis CPU measured. */
export async function runUncontendedInChild(sample: UncontendedSample): Promise<UncontendedResult> {
  const child = fork(workerPath, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    const done = nextMessage<{ result: UncontendedResult }>(child, 'done');
    child.send(sample);
    return (await done).result;
  } finally {
    await endChildren([child]);
  }
}

/** Pairs/s, and the CPU one pair cost this process and the Redis servers (µs). */
export interface UncontendedResult {
  opsPerSec: number;
  clientCpuUs: number;
  redisCpuUs: number | null;
}

/**
 * Scenario (a): `loops` async loops in this process, each on its own key, acquire + release as fast
 * as they can for `durationMs`. Measures pairs/s and what a pair costs in CPU on both sides: the
 * throughput of a machine whose client and Redis share cores depends on both, and the CPU per pair
 * moves less with the machine's noise than the rate does.
 */
export async function runUncontended(
  adapter: LockAdapter,
  options: UncontendedOptions,
): Promise<UncontendedResult> {
  const prefix = `bench-unc-${randomBytes(4).toString('hex')}-`;
  const run = async (durationMs: number) => {
    let pairs = 0;
    let stop = false;
    const timer = setTimeout(() => (stop = true), durationMs);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: options.loops }, async (_, i) => {
        const key = `${prefix}${i}`;
        while (!stop) {
          const held = await adapter.acquire(key, options.access);
          await held.release();
          pairs++;
        }
      }),
    );
    clearTimeout(timer);
    return { pairs, elapsedMs: performance.now() - started };
  };
  await run(options.warmupMs);
  const redisBefore = await options.redisCpuUs?.();
  const cpuBefore = process.cpuUsage();
  const { pairs, elapsedMs } = await run(options.durationMs);
  const cpu = process.cpuUsage(cpuBefore);
  const redisAfter = await options.redisCpuUs?.();
  const perPair = (us: number) => (pairs > 0 ? us / pairs : 0);
  return {
    opsPerSec: (pairs * 1000) / elapsedMs,
    clientCpuUs: perPair(cpu.user + cpu.system),
    redisCpuUs:
      redisBefore === undefined || redisAfter === undefined ? null : perPair(redisAfter - redisBefore),
  };
}
