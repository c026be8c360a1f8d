import { describe, expect, it } from 'vitest';
import { RedisLockClient } from '../../src/index.js';
import { countedRedis } from '../helpers/counted-redis.mjs';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

/** Sharded-subscription counts per connection, from CLIENT LIST (`ssub=`). */
async function shardSubscribers(): Promise<number[]> {
  const list = (await env.redis.client('LIST')) as string;
  return list
    .split('\n')
    .map((line) => Number(/ ssub=(\d+)/.exec(line)?.[1] ?? 0))
    .filter((n) => n > 0);
}

describe('waiting without polling', () => {
  it('a waiter is woken by the release message, not by the holder lease', async () => {
    // Two clients (no local hand-off), their scripts counted on their own connections.
    const connections = [countedRedis(env.server.url), countedRedis(env.server.url)];
    const [holderClient, locks] = connections.map((c) => new RedisLockClient({ redis: c.redis })) as [
      RedisLockClient,
      RedisLockClient,
    ];
    const scripts = () => connections[0]!.sent + connections[1]!.sent;
    try {
      // Every script once first (a NOSCRIPT retry would count twice below).
      await (await holderClient.mutex('ps-wake').acquire()).release();
      const lock = locks.mutex('ps-wake');
      const holder = await holderClient.mutex('ps-wake').acquire({ leaseMs: 600_000 }); // only a wake-up ends the wait in time
      const before = connections[1]!.sent;
      const waiting = lock.acquire();
      // Observed: the waiter's subscription is on the server, and its client has sent its first try
      // and its queued try and has their answers (it sleeps now).
      await expectSubscribed('ls:{ps-wake}:unlock');
      await connections[1]!.settledAfter(before + 2);
      const attemptsBefore = scripts();
      expect(await holder.release()).toBe('released');
      const handle = await waiting;
      expect(handle.fencingToken).toBe(holder.fencingToken + 1);
      // One release → one retry, plus the release itself (no polling loop in between).
      expect(scripts() - attemptsBefore).toBeLessThanOrEqual(3);
      await handle.release();
    } finally {
      await Promise.all([locks.close(), holderClient.close()]); // lingering subscriptions must not count later
      for (const c of connections) c.redis.disconnect();
    }
  });

  it('all waiters of one client share one subscriber connection', async () => {
    const locks = env.locks();
    const holders = await Promise.all(
      Array.from({ length: 10 }, (_, i) => locks.mutex(`ps-shared-${i}`).acquire({ leaseMs: 600_000 })),
    );
    const waiters = holders.flatMap((h) => [0, 1, 2].map(() => locks.mutex(h.name).acquire()));
    for (let i = 0; i < 10; i++) await expectSubscribed(`ls:{ps-shared-${i}}:unlock`);
    expect(await shardSubscribers()).toEqual([10]);
    await Promise.all(holders.map((h) => h.release()));
    // Each waiter releases as soon as it gets the lock; all 30 get it in turn.
    const outcomes = await Promise.all(waiters.map(async (w) => (await w).release()));
    expect(outcomes).toEqual(Array.from({ length: 30 }, () => 'released'));
  });
});

/** Polls the server until `channel` has a subscriber (observation of state, bounded by the test timeout). */
async function expectSubscribed(channel: string): Promise<void> {
  for (;;) {
    const reply = (await env.redis.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
    if (Number(reply[1]) >= 1) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
