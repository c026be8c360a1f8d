import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { checkLockHistory } from '../../src/checker/index.js';
import { RedisFencedStore, RedisLockClient } from '../../src/index.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedis } from '../helpers/redis.js';
import { info, SplitBrainGroup, until } from '../helpers/split-brain.js';

const resource = useRedis(); // the fenced resource: a Redis of its own, outside the split

/**
 * Fault row "Sentinel split brain" (RELIABILITY.md §3, row 4; reproduced by hand in §2.3 L7): the
 * master is cut off from the Sentinel and its replica (a fault proxy on their only path to it), a
 * client still connected to it takes the lock there — the write never reaches the replica — and the
 * Sentinel promotes the replica, where a second client takes the same lock. Replication is
 * asynchronous: both believe they hold it, and the fencing counter, which lived on both servers,
 * hands out the same number twice. The design is unsafe here without fencing; the test asserts that
 * the checker FINDS the two holders and the token going back, and that the fenced resource — which
 * compares (token, owner) — accepted no stale write.
 */
describe('fault: Sentinel split brain', () => {
  it(
    'two clients hold the lock on two masters; the checker finds it; the fenced resource accepts nothing stale',
    // The full suite waits for the heal too: the Sentinel turns the old master around in about 10 s
    // (it waits 8 s after it sees the old master report itself master again).
    { timeout: fullFaultSuite() ? 240_000 : 120_000 },
    async () => {
      const group = await SplitBrainGroup.start();
      const name = 'split';
      const direct = new Redis(group.master.url); // client A's side of the partition: the old master
      const viaSentinel = new Redis({
        sentinels: group.sentinels,
        name: group.masterName,
        lazyConnect: true,
      });
      viaSentinel.on('error', () => undefined);
      direct.on('error', () => undefined); // the old master turns replica at the heal
      const a = new RedisLockClient({ redis: direct, watchdogTimeoutMs: 3_000 });
      const b = new RedisLockClient({ redis: viaSentinel, watchdogTimeoutMs: 30_000 });
      const store = new RedisFencedStore(resource.redis);
      const history = new HistoryRecorder();
      try {
        // Before the fault: the lock has been used once, and the replica has everything.
        await (await a.mutex(name).acquire()).release();
        expect(await direct.wait(1, 5_000)).toBe(1);

        group.link.set('blackhole'); // the master loses the Sentinel and the replica
        history.fault('partition');
        const first = await history.acquire('A', name, () => a.mutex(name).acquire({ owner: 'A' }));
        history.watch('A', name, first);
        expect(await history.write(store, name, 'A', first)).toBe(true);

        const partitionedAt = performance.now();
        await group.failedOver(); // the Sentinel promoted the replica
        const failoverMs = performance.now() - partitionedAt;
        const second = await history.acquire('B', name, () =>
          b.mutex(name).acquire({ owner: 'B', waitMs: 10_000 }),
        );
        history.watch('B', name, second);
        expect(first.signal.aborted).toBe(false); // A renews on the old master, which still takes writes
        expect(second.fencingToken).toBe(first.fencingToken); // the counter's last increment was lost with the split
        // The same token from another owner: refused (the (token, owner) rule; a numbers-only fence would take it).
        expect(await history.write(store, name, 'B', second)).toBe(false);
        await history.release('B', name, second);
        const third = await history.acquire('B2', name, () =>
          b.mutex(name).acquire({ owner: 'B2', waitMs: 10_000 }),
        );
        expect(third.fencingToken).toBeGreaterThan(first.fencingToken);
        expect(await history.write(store, name, 'B2', third)).toBe(true);
        expect(await history.write(store, name, 'A again', first)).toBe(false); // A's stale write: refused

        let healMs: number | undefined;
        if (fullFaultSuite()) {
          // The heal (the fault suite only: the Sentinel takes 10-20 s to turn the old master around):
          // it reaches the old master and makes it a replica of the new one; A's renewals fail there
          // and A learns that it lost the lock.
          group.link.set('pass');
          group.link.reset();
          const healedAt = performance.now();
          await until(
            async () => /role:slave/.test(await info(group.master.url, 'replication')),
            'old master demoted',
            150_000,
          );
          if (!first.signal.aborted) {
            await new Promise((resolve) => first.signal.addEventListener('abort', resolve, { once: true }));
          }
          healMs = performance.now() - healedAt;
        } else {
          await history.release('A', name, first); // still partitioned: A gives the lock back on the old master
        }
        await history.release('B2', name, third);

        const report = checkLockHistory(history.events);
        expect(report.checks.exclusion.valid).toBe(false); // two believed holders: the split brain happened
        expect(report.checks.exclusion.violations.flatMap((v) => v.owners)).toEqual(
          expect.arrayContaining(['A', 'B']),
        );
        expect(report.checks.tokens.violations).toEqual([
          { lock: name, earlier: `A@${first.fencingToken}`, later: `B@${second.fencingToken}` },
        ]);
        expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 2 });
        expect(await store.read(name)).toBe('B2');
        reportRow({
          row: 'sentinel-split-brain',
          backend: 'sentinel',
          fault:
            'the master cut off from the Sentinel and its replica (fault proxy); a client still on it takes the lock; the replica is promoted and another client takes it there; then the heal',
          expected: ['VIOL', 'F-OK'],
          observed:
            `A (old master) and B (new master) held the lock at once, both with token ${first.fencingToken} — ` +
            "the checker found the overlap and the token re-issued; the fenced resource refused B's equal token " +
            "(another owner) and A's write after B2's newer one, and accepted nothing stale" +
            (healMs === undefined
              ? ''
              : `; at the heal the old master became a replica and A's signal aborted (${first.lostError?.reason}) after ${(healMs / 1000).toFixed(1)} s`),
          file: 'test/faults/sentinel-split-brain.test.ts',
          checker: report,
          figures: {
            failoverMs: Math.round(failoverMs),
            ...(healMs === undefined ? {} : { healMs: Math.round(healMs) }),
          },
        });
      } finally {
        group.link.set('pass');
        await Promise.all([a.close(), b.close()]);
        direct.disconnect();
        viaSentinel.disconnect();
        await group.stop();
      }
    },
  );
});
