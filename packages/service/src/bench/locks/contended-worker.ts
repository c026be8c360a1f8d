/**
 * Child process of the contended benchmark (forked by contended.ts). Runs `loops` async loops that
 * compete for one lock; each critical section is GET, 1 ms, SET on a shared counter. Reports every
 * section's times (CLOCK_MONOTONIC ns, comparable across processes) and the waits still open at the end.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createAdapter, type ClientSetting, type LibraryName } from './libraries.js';

export interface WorkerConfig {
  library: LibraryName;
  setting: ClientSetting;
  url: string;
  lockName: string;
  counterKey: string;
  loops: number;
  durationMs: number;
}

export interface SectionTimes {
  loop: string;
  invokedAt: string;
  acquiredAt: string;
  releasingAt: string;
}

export interface WorkerReport {
  type: 'done';
  sections: SectionTimes[];
  /** acquire() calls still waiting when the run ended: [loop, invokedAt]. */
  waiting: Array<[string, string]>;
  endedAt: string;
}

const now = () => process.hrtime.bigint();

async function main(config: WorkerConfig): Promise<void> {
  const adapter = await createAdapter(config.library, config.url, config.setting);
  const redis = new Redis(config.url);
  const warm = await adapter.acquire(`${config.lockName}-warmup-${process.pid}`); // loads scripts
  await warm.release();
  process.send?.({ type: 'ready' });
  await new Promise((resolve) => process.once('message', resolve));

  const sections: SectionTimes[] = [];
  const waitingSince = new Map<string, bigint>();
  let stopped = false;
  let inSection = 0;
  let onDrained: () => void = () => undefined;
  const drained = new Promise<void>((resolve) => (onDrained = resolve));

  const loop = async (id: string) => {
    while (!stopped) {
      const invokedAt = now();
      waitingSince.set(id, invokedAt);
      const held = await adapter.acquire(config.lockName);
      waitingSince.delete(id);
      if (stopped) {
        await held.release();
        break;
      }
      inSection++;
      const acquiredAt = now();
      const value = Number((await redis.get(config.counterKey)) ?? 0);
      await delay(1);
      await redis.set(config.counterKey, value + 1);
      const releasingAt = now();
      sections.push({
        loop: id,
        invokedAt: String(invokedAt),
        acquiredAt: String(acquiredAt),
        releasingAt: String(releasingAt),
      });
      inSection--;
      if (stopped && inSection === 0) onDrained();
      await held.release();
    }
  };
  for (let i = 0; i < config.loops; i++) void loop(`${process.pid}:${i}`).catch(fail);
  await delay(config.durationMs);
  stopped = true;
  const endedAt = now();
  if (inSection > 0) await drained;
  const report: WorkerReport = {
    type: 'done',
    sections,
    waiting: [...waitingSince].map(([id, since]) => [id, String(since)]),
    endedAt: String(endedAt),
  };
  process.send?.(report, () => process.exit(0));
}

function fail(error: unknown): void {
  console.error(error);
  process.exit(1);
}

process.once('message', (config: WorkerConfig) => void main(config).catch(fail));
process.once('disconnect', () => process.exit(1)); // the benchmark is gone: stop, do not linger
