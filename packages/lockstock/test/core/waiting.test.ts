import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer, PostgresServer, ZooKeeperServer } from '@lockstock/servers';
import type { Lock, LockClient } from '../../src/index.js';
import { EtcdLockClient } from '../../src/etcd/index.js';
import { PostgresLockClient } from '../../src/postgres/index.js';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';

/*
 * inspect().waiting where the store queues every waiter: a holder and three waiters, each of its own
 * client (the store's count, not one client's), read while they wait; one fewer once the holder
 * releases and the next is granted. Where a store queues only one waiter per client (a PostgreSQL
 * mutex), `waiting` is undefined rather than a wrong count.
 */
const WAITERS = 3;
let zooKeeper: ZooKeeperServer;
let etcd: EtcdServer;
let postgres: PostgresServer;
const clients: LockClient[] = [];

beforeAll(async () => {
  [zooKeeper, etcd, postgres] = await Promise.all([
    ZooKeeperServer.start(),
    EtcdServer.start(),
    PostgresServer.start(),
  ]);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all([zooKeeper?.stop(), etcd?.stop(), postgres?.stop()]);
});

const stores: Record<string, () => LockClient> = {
  zookeeper: () => new ZooKeeperLockClient({ connectString: zooKeeper.connectString }),
  etcd: () => new EtcdLockClient({ hosts: etcd.endpoint }),
  postgres: () => new PostgresLockClient({ postgres: postgres.url, maxConnections: 4 }),
};
const made = (store: string): LockClient => {
  const client = stores[store]!();
  clients.push(client);
  return client;
};

async function queueOf(store: string, lockOf: (client: LockClient) => Lock): Promise<void> {
  const holder = await lockOf(made(store)).acquire();
  const observer = lockOf(made(store));
  const waiters = Array.from({ length: WAITERS }, () => lockOf(made(store)).acquire({ waitMs: 60_000 }));
  await expect.poll(async () => (await observer.inspect()).waiting, { timeout: 30_000 }).toBe(WAITERS);
  const info = await observer.inspect();
  expect(info.holders).toBe(1);
  await holder.release();
  const next = await Promise.race(waiters);
  await expect.poll(async () => (await observer.inspect()).waiting, { timeout: 30_000 }).toBe(WAITERS - 1);
  await next.release();
  // The others are granted one by one, in the store's order: each released as it comes.
  const outcomes = await Promise.all(waiters.map((w) => w.then((h) => (h === next ? 'first' : h.release()))));
  expect(outcomes.filter((o) => o === 'released')).toHaveLength(WAITERS - 1);
  expect((await observer.inspect()).waiting).toBe(0);
}

describe('inspect().waiting', () => {
  it('ZooKeeper mutex and fair lock: every waiter of every client', async () => {
    await queueOf('zookeeper', (c) => c.mutex('waited-mutex'));
    await queueOf('zookeeper', (c) => c.fair('waited-fair'));
  });

  it('etcd mutex and semaphore: every waiter of every client', async () => {
    await queueOf('etcd', (c) => c.mutex('waited-mutex'));
    await queueOf('etcd', (c) => c.semaphore('waited-semaphore', { permits: 1 }));
  });

  it("PostgreSQL's fair lock: the server's lock queue; its mutex says it cannot tell", async () => {
    await queueOf('postgres', (c) => c.fair('waited-fair'));
    expect((await made('postgres').mutex('not-counted').inspect()).waiting).toBeUndefined();
  });

  it('a read-write lock and a ZooKeeper semaphore (waiters behind a gate) do not count', async () => {
    expect((await made('zookeeper').readWrite('rw').write.inspect()).waiting).toBeUndefined();
    expect((await made('zookeeper').semaphore('gated', { permits: 1 }).inspect()).waiting).toBeUndefined();
  });
});
