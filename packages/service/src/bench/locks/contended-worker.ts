/**
 * Child process of the contended benchmarks (forked by contended.ts, advanced IPC serialization).
 * Runs `loops` async loops that compete for one lock, each section ~1 ms:
 * - `exclusive` (a mutex, a fair lock): GET counter, 1 ms, SET counter + 1;
 * - `read-write`: writers as above; readers GET counter, 1 ms, GET counter (a change = a torn read);
 * - `semaphore`: INCR inside, 1 ms, DECR inside (the INCR's answer = holders inside, this one too).
 * Reports every section's times (CLOCK_MONOTONIC ns, comparable across processes), what it saw, and
 * the waits still open at the end.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createAdapter, type AdapterSpec, type HeldLock } from './libraries.js';

export type Workload = 'exclusive' | 'read-write' | 'semaphore';

export interface WorkerConfig {
  adapter: AdapterSpec;
  workload: Workload;
  /** The Redis of the counter (the lock may be held in another store). */
  counterUrl: string;
  lockName: string;
  /** The counter writers increment (exclusive, read-write) or the holders inside (semaphore). */
  counterKey: string;
  loops: number;
  /** How many of this process's loops write (read-write workload); the others read. */
  writers: number;
  durationMs: number;
}

export interface Section {
  loop: string;
  write: boolean;
  invokedAt: bigint;
  acquiredAt: bigint;
  releasingAt: bigint;
  /** semaphore: holders inside on entry, this one included; read: 1 if the counter moved, else 0. */
  seen: number;
}

export interface WorkerReport {
  type: 'done';
  sections: Section[];
  /** acquire() calls still waiting when the run ended. */
  waiting: Array<{ loop: string; write: boolean; since: bigint }>;
  endedAt: bigint;
}

const now = () => process.hrtime.bigint();

async function main(config: WorkerConfig): Promise<void> {
  const adapter = await createAdapter(config.adapter);
  const redis = new Redis(config.counterUrl);
  const warm = await adapter.acquire(`${config.lockName}-warmup-${process.pid}`); // loads scripts
  await warm.release();
  process.send?.({ type: 'ready' });
  await new Promise((resolve) => process.once('message', resolve));

  const sections: Section[] = [];
  const waiting = new Map<string, { write: boolean; since: bigint }>();
  let stopped = false;
  let inSection = 0;
  let onDrained: () => void = () => undefined;
  const drained = new Promise<void>((resolve) => (onDrained = resolve));

  /** The ~1 ms of work under the lock; returns what it saw. */
  const work = async (write: boolean): Promise<number> => {
    const key = config.counterKey;
    if (config.workload === 'semaphore') {
      const inside = await redis.incr(key);
      await delay(1);
      await redis.decr(key);
      return inside;
    }
    const before = await redis.get(key);
    await delay(1);
    if (write) {
      await redis.set(key, Number(before ?? 0) + 1);
      return 0;
    }
    return (await redis.get(key)) === before ? 0 : 1;
  };

  const loop = async (id: string, write: boolean) => {
    while (!stopped) {
      const invokedAt = now();
      waiting.set(id, { write, since: invokedAt });
      const held: HeldLock = await adapter.acquire(config.lockName, write ? 'write' : 'read');
      waiting.delete(id);
      if (stopped) {
        await held.release();
        break;
      }
      inSection++;
      const acquiredAt = now();
      const seen = await work(write);
      sections.push({ loop: id, write, invokedAt, acquiredAt, releasingAt: now(), seen });
      inSection--;
      if (stopped && inSection === 0) onDrained();
      await held.release();
    }
  };
  for (let i = 0; i < config.loops; i++) {
    const write = config.workload !== 'read-write' || i < config.writers;
    void loop(`${process.pid}:${i}`, write).catch(fail);
  }
  await delay(config.durationMs);
  stopped = true;
  const endedAt = now();
  if (inSection > 0) await drained;
  const report: WorkerReport = {
    type: 'done',
    sections,
    waiting: [...waiting].map(([loop, { write, since }]) => ({ loop, write, since })),
    endedAt,
  };
  process.send?.(report, () => process.exit(0));
}

function fail(error: unknown): void {
  console.error(error);
  process.exit(1);
}

process.once('message', (config: WorkerConfig) => void main(config).catch(fail));
process.once('disconnect', () => process.exit(1)); // the benchmark is gone: stop, do not linger
