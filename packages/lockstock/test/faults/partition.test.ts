import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { checkLockHistory } from '../../src/checker/index.js';
import { LockLostError, RedisFencedStore, RedisLockClient } from '../../src/index.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

/**
 * Fault row "a client partitioned" (RELIABILITY.md §3): the holder's link to Redis goes dark (a TCP
 * proxy between them drops everything, connections stay open). Its renewals cannot arrive, so its
 * watchdog declares the hold lost at its validity deadline — computed from when the last renewal was
 * sent, less the drift allowance, so it falls before Redis lets the key expire — and another client
 * takes the lock after that. The checker finds no double holding; once the link heals, the partitioned
 * holder's write under its old token is refused by the fenced resource.
 */
describe('fault: the holder partitioned from Redis', () => {
  it('learns it lost the lock before anyone else gets it, and its late write is refused', async () => {
    const name = 'fault-partition';
    const proxy = await FaultProxy.start({ host: '127.0.0.1', port: env.server.port });
    const partitioned = new RedisLockClient({
      redis: { host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 1, commandTimeout: 200 },
      watchdogTimeoutMs: 900,
    });
    const redis = new Redis(env.server.url);
    const store = new RedisFencedStore(redis);
    const history = new HistoryRecorder();
    try {
      const held = await history.acquire('a', name, () => partitioned.mutex(name).acquire({ owner: 'a' }));
      held.onLost(() => history.record({ proc: 'a', type: 'ok', f: 'lost', lock: name }));

      proxy.set('blackhole');
      const next = await history.acquire('b', name, () =>
        env.locks().mutex(name).acquire({ owner: 'b', waitMs: 10_000 }),
      );
      expect(held.signal.aborted).toBe(true); // it knew before b had the lock
      expect(held.lostError).toBeInstanceOf(LockLostError);
      expect(await history.write(store, name, 'b', next)).toBe(true);

      proxy.set('pass');
      proxy.reset(); // the dark connections are dropped; the client reconnects
      expect(await history.write(store, name, 'a (late)', held)).toBe(false); // a careless holder, healed
      await history.release('b', name, next);

      const report = checkLockHistory(history.events);
      expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
      expect(report.checks.fence).toMatchObject({ valid: true, rejectedStale: 1 });
      const { events } = history;
      expect(events.findIndex((e) => e.f === 'lost')).toBeLessThan(
        events.findIndex((e) => e.proc === 'b' && e.type === 'ok' && e.f === 'acquire'),
      );
      reportRow({
        row: 'holder-partitioned',
        backend: 'redis',
        fault:
          "the holder's link to Redis goes dark (fault proxy blackhole: nothing passes, nothing closes); lease 900 ms",
        expected: ['OK', 'F-OK'],
        observed:
          "the holder's watchdog declared the hold lost at its validity deadline, before Redis let the key expire and another client got it: no overlap; its write after the heal refused",
        file: 'test/faults/partition.test.ts',
        checker: report,
      });
    } finally {
      await partitioned.close();
      redis.disconnect();
      await proxy.stop();
    }
  });
});
