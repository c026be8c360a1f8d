import { afterAll, describe, expect, it } from 'vitest';
import { checkLockHistory } from '../../src/checker/index.js';
import { RedisLockClient } from '../../src/index.js';
import { countedRedis, type CountedRedis } from '../helpers/counted-redis.mjs';
import { forkFixtures } from '../helpers/processes.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

/**
 * Lock clients whose scripts are counted on their own connections (not server-wide: nothing else
 * on the server — another test's renewals — can move the count).
 */
const counted: Array<{ connection: CountedRedis; client: RedisLockClient }> = [];
function countedClient(waiterTimeoutMs?: number): { client: RedisLockClient; scripts: () => number } {
  const connection = countedRedis(env.server.url);
  const client = new RedisLockClient({ redis: connection.redis, waiterTimeoutMs });
  counted.push({ connection, client });
  return { client, scripts: () => connection.sent };
}
afterAll(async () => {
  for (const { connection, client } of counted) {
    await client.close();
    connection.redis.disconnect();
  }
});

/** Resolves once `count` waiters are queued, observed through the lock's own view of itself. */
async function untilQueued(name: string, count: number): Promise<void> {
  // The queue is not part of the public API; its length is observable as the number of acquires
  // that were refused and stayed: poll the server's queue size by its documented layout.
  for (;;) {
    if ((await env.redis.zcard(`ls:{${name}}:fair:queue`)) >= count) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('fair lock', () => {
  it('grants in arrival order across clients, whoever releases', async () => {
    const clients = Array.from({ length: 4 }, () => env.locks());
    const name = 'f-order';
    const recorder = new HistoryRecorder();
    const first = await recorder.acquire('first', name, () => clients[0]!.fair(name).acquire());
    const order: number[] = [];
    const waiting: Promise<unknown>[] = [];
    // Arrivals alternate between clients, so per-client FIFO alone would not give this order.
    for (let i = 0; i < 8; i++) {
      const client = clients[i % 4]!;
      waiting.push(
        recorder
          .acquire(`w${i}`, name, () => client.fair(name).acquire({ owner: `w${i}` }))
          .then(async (h) => (order.push(i), recorder.release(`w${i}`, name, h))),
      );
      await untilQueued(name, i + 1);
      // Seen in Redis's queue: its place is known before the next waiter begins.
      recorder.record({ proc: `w${i}`, type: 'ok', f: 'queued', lock: name });
    }
    await recorder.release('first', name, first);
    await Promise.all(waiting);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // The history checker's FIFO check (L6) on what was recorded, its liveness check (each release
    // reaches the next waiter within 2 s, room for a loaded machine), and its other checks.
    const report = checkLockHistory(recorder.events, { fair: true, grantWithinNs: 2_000_000_000 });
    expect(report.checks.fifo).toEqual({ valid: true, checked: true, violations: [] });
    expect(report.checks.liveness.valid).toBe(true);
    expect(report.checks.ownership.valid).toBe(true);
    expect(report.valid).toBe(true);
    // The same history with two grants swapped is reported: the check can fail on it.
    const swapped = recorder.events.map((event) =>
      event.f === 'acquire' && event.type === 'ok' && ['w3', 'w4'].includes(event.proc)
        ? {
            ...event,
            t: recorder.events.find(
              (e) => e.proc === (event.proc === 'w3' ? 'w4' : 'w3') && e.f === 'acquire' && e.type === 'ok',
            )!.t,
          }
        : event,
    );
    expect(checkLockHistory(swapped, { fair: true }).checks.fifo.violations).toMatchObject([
      { lock: name, overtaken: 'w3', by: 'w4' },
    ]);
  });

  it('a release wakes only the next waiter', async () => {
    // A queued waiter tries again every third of the waiter timeout to keep its place: with the
    // default (3 s) all ten would do so every second, and a slow machine's release can fall on one
    // of those rounds. A long timeout and lease keep every try in this window a wake-up's.
    const waiterTimeoutMs = 120_000;
    const a = countedClient(waiterTimeoutMs);
    const name = 'f-herd';
    const held = await a.client.fair(name).acquire({ leaseMs: 120_000 });
    // Made now, b's first tries wait in ioredis' offline queue until it connects, and are sent
    // again from there: counted once all the same (helpers/counted-redis.mjs).
    const b = countedClient(waiterTimeoutMs);
    const scripts = () => a.scripts() + b.scripts();
    const start = scripts();
    const waiters = Array.from({ length: 10 }, (_, i) => b.client.fair(name).acquire({ owner: `h${i}` }));
    await untilQueued(name, 10);
    // Each waiter's first try queued it; once its client listens for wake-ups it looks once more
    // (a release between the two would otherwise go unheard). Then all of them sleep.
    await expect.poll(() => scripts() - start).toBeGreaterThanOrEqual(20);
    const before = scripts();
    await held.release();
    const next = await Promise.race(waiters);
    // The release and the next waiter's attempt; the nine others stay asleep.
    expect(scripts() - before).toBeLessThanOrEqual(3);
    await next.release();
    for (const w of waiters) await (await w).release();
  });

  it('a dead waiter does not stall the queue: it is dropped after the waiter timeout', async () => {
    const waiterTimeoutMs = 600;
    const locks = env.locks({ waiterTimeoutMs });
    const name = 'f-dead';
    const held = await locks.fair(name).acquire();
    // A waiter in another process queues first, then dies without leaving the queue.
    const [dead] = forkFixtures('fair-waiter.mjs', [[env.server.url, name, String(waiterTimeoutMs)]]);
    await dead!.next('queued');
    dead!.kill('SIGKILL');
    await dead!.exited;
    // Without dropping the dead waiter the queue would wait for it forever: the wait is the bound.
    const next = locks.fair(name).acquire({ owner: 'alive', waitMs: waiterTimeoutMs + 10_000 });
    await untilQueued(name, 2);
    await held.release(); // wakes the dead waiter, which never comes
    const handle = await next;
    expect(handle.owner).toBe('alive');
    await handle.release();
  });

  it('a waiter that gives up leaves the queue: the next one is served at once', async () => {
    const { client: locks, scripts } = countedClient(120_000); // no keep-place tries in the window
    const name = 'f-give-up';
    const held = await locks.fair(name).acquire({ leaseMs: 60_000 });
    const controller = new AbortController();
    const quitter = locks.fair(name).acquire({ owner: 'quitter', signal: controller.signal });
    await untilQueued(name, 1);
    const patient = locks.fair(name).acquire({ owner: 'patient' });
    await untilQueued(name, 2);
    controller.abort();
    await expect(quitter).rejects.toMatchObject({ code: 'ERR_LOCK_ABORTED' });
    while ((await env.redis.zcard(`ls:{${name}}:fair:queue`)) > 1) await new Promise((r) => setImmediate(r));
    const before = scripts();
    await held.release(); // the patient waiter is next, and ours: the release hands it the lock
    const handle = await patient;
    expect(scripts() - before).toBeLessThanOrEqual(2);
    expect(handle.owner).toBe('patient');
    await handle.release();
  });
});
