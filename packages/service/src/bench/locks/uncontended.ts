import { randomBytes } from 'node:crypto';
import type { Access, LockAdapter } from './libraries.js';

export interface UncontendedOptions {
  loops: number;
  durationMs: number;
  warmupMs: number;
  /** `read` takes the read lock of a read-write lock. @default 'write' */
  access?: Access;
}

/**
 * Scenario (a): `loops` async loops in this process, each on its own key, acquire + release as fast
 * as they can for `durationMs`. Measures the client-side cost of a library (Redis has CPU to spare).
 */
export async function runUncontended(adapter: LockAdapter, options: UncontendedOptions): Promise<number> {
  const prefix = `bench-unc-${randomBytes(4).toString('hex')}-`;
  const run = async (durationMs: number): Promise<number> => {
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
    return (pairs * 1000) / (performance.now() - started);
  };
  await run(options.warmupMs);
  return run(options.durationMs);
}
