import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockNotReplicatedError, PostgresFencedStore, RedisLockClient } from '../../src/index.js';
import { PostgresServer, RedisSentinelGroup } from '@lockstock/servers';

let postgres: PostgresServer;
let pool: pg.Pool;
const clients: RedisLockClient[] = [];
const connections: Redis[] = [];

beforeAll(async () => {
  postgres = await PostgresServer.start();
  pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
  pool.on('error', () => undefined);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  connections.forEach((c) => c.disconnect());
  await pool.end();
  await postgres.stop();
});

/** A lock client connected through the Sentinel: it follows the master across a failover. */
function client(
  group: RedisSentinelGroup,
  options: Partial<ConstructorParameters<typeof RedisLockClient>[0]> = {},
) {
  const redis = new Redis({ sentinels: group.sentinels, name: group.masterName, maxRetriesPerRequest: 50 });
  redis.on('error', () => undefined); // the killed master: ioredis reconnects through the Sentinel
  connections.push(redis);
  const locks = new RedisLockClient({ redis, watchdogTimeoutMs: 10_000, ...options });
  clients.push(locks);
  return locks;
}

describe('Sentinel failover: the async-replication hazard, and what WAIT and fencing change', () => {
  it('a lock taken on the old master but not replicated is lost in a failover: a second holder gets it, fencing lets only one write', async () => {
    const group = await RedisSentinelGroup.start();
    try {
      const [a, b] = [client(group), client(group)];
      await (await b.mutex('warm-up').acquire()).release(); // both connected before the fault
      const replica = group.replicas[0]!;
      // Cut replication before the lock is taken: pause the replica, and drop its link on the master
      // (a paused replica would still find the write in its socket buffer when it resumes).
      replica.signal('SIGSTOP');
      const admin = new Redis(group.master.url);
      await admin.client('KILL', 'TYPE', 'replica');
      admin.disconnect();
      const first = await a.mutex('failover').acquire(); // granted by the master alone
      await group.master.kill();
      replica.signal('SIGCONT');
      await group.failedOver(group.master.port);
      const second = await b.mutex('failover').acquire({ waitMs: 15_000 });
      // Two holders at once, each believing it holds the lock: the hazard, shown, not hidden.
      expect(first.signal.aborted).toBe(false);
      expect(second.signal.aborted).toBe(false);
      // The fencing counter lived on the lost master too: the new master issued the same number again.
      expect(second.fencingToken).toBeLessThanOrEqual(first.fencingToken);
      // The (token, owner) rule still lets only one of them write: the equal token of another owner
      // is refused (a counter that only compared numbers would accept both).
      const store = new PostgresFencedStore<string>(pool);
      await store.migrate();
      const accepted = [
        await store.write('failover', 'second', second),
        await store.write('failover', 'first', first),
      ];
      expect(accepted).toEqual([true, false]);
      expect(await store.read('failover')).toBe('second');
    } finally {
      await group.stop();
    }
  });

  it('with replica acknowledgement the same lock is refused while the replica lags, and survives a failover once acknowledged', async () => {
    const group = await RedisSentinelGroup.start();
    try {
      const a = client(group, { replicaAcks: { replicas: 1, timeoutMs: 1_000 } });
      const b = client(group);
      const replica = group.replicas[0]!;
      replica.signal('SIGSTOP');
      const refused = await a
        .mutex('acked')
        .acquire({ waitMs: 5_000 })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LockNotReplicatedError);
      expect(await b.mutex('acked').isLocked()).toBe(false); // given back
      replica.signal('SIGCONT');
      await group.caughtUp(); // the replica is back in sync: acknowledgements come again
      const held = await a.mutex('acked').acquire({ waitMs: 5_000 }); // acknowledged by the replica
      await group.master.kill();
      await group.failedOver(group.master.port);
      expect(await b.mutex('acked').tryAcquire({ waitMs: 500 })).toBeUndefined(); // the promoted replica has it
      expect(await held.release()).toBe('released');
    } finally {
      await group.stop();
    }
  });

  it('replicaAcks is refused with a bad value or a Cluster client', () => {
    expect(
      () =>
        new RedisLockClient({ redis: 'redis://127.0.0.1:1', replicaAcks: { replicas: 0, timeoutMs: 100 } }),
    ).toThrow(/replicaAcks/);
  });
});
