/**
 * Child process of the memory curves (forked by curves.ts with --expose-gc, a fresh heap per point):
 * holds `n` locks, or keeps `n` callers waiting on one held lock, on one store with lockstock's mutex,
 * and reports its heap (after a full GC) before and with them. The parent reads the store's memory in
 * between (curves.ts), so both sides of a hold are measured in the same state.
 *
 * Messages: parent → { config } → 'ready' { heap } → parent: { type: 'go' } → 'measured' { heap, ms }
 * → parent: { type: 'end' } → everything released → 'ended', exit.
 */
import { setMaxListeners } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { RedisLockClient } from 'lockstock';
import { EtcdLockClient } from 'lockstock/etcd';
import { connect, disconnect, type Target } from './targets.js';

export interface CurvesWorkerConfig {
  target: Target;
  mode: 'holds' | 'waiters';
  n: number;
  /** Unique per point: lock names never meet an earlier point's. */
  run: string;
}

/** Acquisitions and releases in flight at once while building up and tearing down the holds. */
const IN_FLIGHT = 256;

interface Held {
  release(): Promise<unknown>;
}

const gc = (globalThis as { gc?: () => void }).gc;
function heap(): number {
  // Twice: a first full GC can leave garbage that finalizers freed for the second one.
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

const message = (type: string) =>
  new Promise<void>((resolve) => {
    const on = (m: { type?: string }) => {
      if (m?.type !== type) return;
      process.off('message', on);
      resolve();
    };
    process.on('message', on);
  });

async function inBatches(n: number, each: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(IN_FLIGHT, n) }, async () => {
      while (next < n) await each(next++);
    }),
  );
}

async function main(config: CurvesWorkerConfig): Promise<void> {
  if (!gc) throw new Error('the curves worker needs --expose-gc');
  const connections = await connect(config.target, 'default');
  const locks =
    connections.topology === 'single'
      ? new RedisLockClient({ redis: connections.client })
      : connections.topology === 'etcd'
        ? new EtcdLockClient({ etcd: connections.client })
        : undefined;
  if (!locks) throw new Error(`no memory curve on ${config.target.topology}`);
  const warm = await locks.mutex(`curves-${config.run}-warm`).acquire(); // scripts, session, JIT
  await warm.release();
  const before = heap();
  process.send?.({ type: 'ready', heap: before });
  await message('go');

  const started = performance.now();
  const held: Held[] = [];
  const abort = new AbortController();
  let waits: Array<Promise<unknown>> = [];
  if (config.mode === 'holds') {
    await inBatches(config.n, async (i) => {
      held.push(await locks.mutex(`curves-${config.run}-${i}`).acquire());
    });
  } else {
    const name = `curves-${config.run}-waited`;
    setMaxListeners(0, abort.signal); // one signal for every waiter: a listener each, by design
    held.push(await locks.mutex(name).acquire());
    waits = Array.from({ length: config.n }, () =>
      locks
        .mutex(name)
        .acquire({ signal: abort.signal })
        .then((late) => late.release()) // not expected: the lock stays held
        .catch(() => undefined),
    );
    // A benchmark, not a test: give the waits time to reach the store (a first try, a subscription,
    // a queue entry, a watch) before measuring; no waiter can finish while the lock is held.
    await delay(1_000 + config.n / 10);
  }
  const ms = performance.now() - started;
  process.send?.({ type: 'measured', heap: heap(), ms });
  await message('end');

  abort.abort();
  await Promise.all(waits);
  try {
    await inBatches(held.length, async (i) => {
      await held[i]?.release();
    });
    await locks.close();
  } catch (error) {
    // The figures are taken: a teardown the store refused (etcd3's circuit breaker opens after ten
    // thousand cancelled waits) is said, not fatal; the holds end with this process's session.
    console.error(`curves worker teardown: ${String(error)}`);
  }
  disconnect(connections);
  process.send?.({ type: 'ended' }, () => process.exit(0));
}

function fail(error: unknown): void {
  console.error(error);
  process.exit(1);
}

process.once('message', (config: CurvesWorkerConfig) => void main(config).catch(fail));
process.once('disconnect', () => process.exit(1)); // the benchmark is gone: stop, do not linger
