import { describe, expect, it } from 'vitest';
import { LockAbortedError, RedisLockClient, type Lock, type LockClient } from '../../src/index.js';
import { countedRedis } from '../helpers/counted-redis.mjs';
import { forkFixtures } from '../helpers/processes.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

/** Every kind whose waiters are woken and then send an acquire script (the race's window). */
const KINDS: Record<string, (client: LockClient, name: string) => Lock> = {
  mutex: (c, n) => c.mutex(n),
  reentrant: (c, n) => c.reentrant(n),
  fair: (c, n) => c.fair(n),
  write: (c, n) => c.readWrite(n).write,
  semaphore: (c, n) => c.semaphore(n, { permits: 1 }),
};

/** Someone else can take the lock now: it was not left held by an owner nobody can release. */
async function expectFree(make: (client: LockClient, name: string) => Lock, name: string): Promise<void> {
  const probe = await make(env.locks(), name).acquire({ waitMs: 10_000 });
  await probe.release();
}

describe('an acquire aborted while its winning attempt is in flight gives the lock back', () => {
  for (const [kind, make] of Object.entries(KINDS)) {
    it(`${kind}: the abort lands right after the woken waiter sent its acquire`, async () => {
      const name = `abort-race-${kind}`;
      const holderClient = env.locks();
      const counted = countedRedis(env.server.url);
      // A long waiter timeout: a queued fair or write waiter's keep-place try (every third of it)
      // must not be the script the abort lands after; only the woken attempt is.
      const waiterClient = new RedisLockClient({ redis: counted.redis, waiterTimeoutMs: 120_000 });
      try {
        // Warm the scripts (no NOSCRIPT round trips in the counts below).
        await (await make(waiterClient, name).acquire()).release();
        const held = await make(holderClient, name).acquire();
        const controller = new AbortController();
        const before = counted.sent;
        const waiting = make(waiterClient, name).acquire({ signal: controller.signal });
        const outcome = waiting.then(
          () => 'acquired',
          (error: unknown) => error,
        );
        await counted.settledAfter(before + 2); // refused twice, now asleep until woken
        // The release wakes the waiter; the abort comes right after its acquire script is written.
        counted.afterNextScript(() => controller.abort(new Error('caller gave up')));
        await held.release();
        expect(await outcome).toBeInstanceOf(LockAbortedError);
        await expectFree(make, name);
      } finally {
        await waiterClient.close();
        counted.redis.disconnect();
      }
    });
  }

  it('mutex and semaphore across two processes: the race run many times, free after every round', async () => {
    for (const kind of ['mutex', 'semaphore'] as const) {
      const make = KINDS[kind]!;
      const name = `abort-race-procs-${kind}`;
      const [waiter] = forkFixtures('aborting-waiter.mjs', [
        [JSON.stringify({ url: env.server.url, subject: kind, name })],
      ]);
      const outcomes: Record<string, number> = {};
      try {
        await waiter!.next('ready');
        const holder = make(env.locks(), name);
        for (let round = 0; round < 40; round++) {
          const held = await holder.acquire();
          waiter!.send({ type: 'wait', round });
          await waiter!.next('waiting');
          // Abort and release together; the abort lands before, during or after the woken attempt.
          waiter!.send({ type: 'abort', jitterMs: round % 4 });
          await held.release();
          const { outcome } = await waiter!.next('outcome');
          outcomes[String(outcome)] = (outcomes[String(outcome)] ?? 0) + 1;
          await expectFree(make, name); // never left held by the aborted waiter's owner
        }
        waiter!.send({ type: 'exit' });
        await waiter!.exited;
      } finally {
        waiter!.kill();
      }
      expect(Object.keys(outcomes).every((o) => o === 'acquired' || o === 'LockAbortedError')).toBe(true);
      expect(outcomes.LockAbortedError).toBeGreaterThan(0); // the aborts did race the wake-ups
    }
  });
});
