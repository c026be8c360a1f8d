// The lock kinds the contract suite runs against, by name, in a form both the tests (TypeScript) and
// the fixture processes (plain Node) can use. Each subject says how to make its lock from any
// LockClient, how many holders it admits at once, and which parts of the contract apply.
import pg from 'pg';
import { Cluster } from 'ioredis';
import { PostgresTokenSource, RedisLockClient, RedlockClient } from 'lockstock';
import { EtcdLockClient } from 'lockstock/etcd';
import { ZooKeeperLockClient } from 'lockstock/zookeeper';
import { PostgresLockClient } from 'lockstock/postgres';
import { MySqlLockClient } from 'lockstock/mysql';
import { LocalLockClient } from 'lockstock/local';

const rw = (client, name) => client.readWrite(name);

/** @type {Record<string, import('./subjects.d.mts').Subject>} */
export const SUBJECTS = {
  mutex: { bound: 1, reentrant: false, leased: true, make: (c, n) => c.mutex(n) },
  reentrant: { bound: 1, reentrant: true, leased: true, make: (c, n) => c.reentrant(n) },
  fair: { bound: 1, reentrant: true, leased: true, make: (c, n) => c.fair(n) },
  spin: { bound: 1, reentrant: true, leased: true, make: (c, n) => c.spin(n) },
  write: { bound: 1, reentrant: true, leased: true, make: (c, n) => rw(c, n).write },
  // Readers share: what blocks them (and what a dead reader blocks) is the write side.
  read: {
    bound: Infinity,
    reentrant: true,
    leased: true,
    make: (c, n) => rw(c, n).read,
    opposite: (c, n) => rw(c, n).write,
  },
  // Mixed sections on one read-write lock: writers alone, readers together.
  'read-write': {
    bound: Infinity,
    reentrant: true,
    leased: true,
    make: (c, n) => rw(c, n).write,
    mixed: (c, n, i) =>
      i % 3 === 0 ? { mode: 'exclusive', lock: rw(c, n).write } : { mode: 'shared', lock: rw(c, n).read },
  },
  semaphore: { bound: 3, reentrant: false, leased: true, make: (c, n) => c.semaphore(n, { permits: 3 }) },
  'counter-semaphore': {
    bound: 3,
    reentrant: false,
    leased: false,
    make: (c, n) => c.counterSemaphore(n, { permits: 3 }),
  },
  'multi-lock': {
    bound: 1,
    reentrant: false,
    leased: true,
    make: (c, n) => c.multiLock([c.reentrant(`${n}:b`), c.mutex(`${n}:a`)]),
  },
};

/** A lock client for a backend described in JSON (fixture processes receive it on their command line). */
export function connect(backend) {
  if (backend.kind === 'redis') {
    return new RedisLockClient({
      redis: backend.url,
      watchdogTimeoutMs: backend.watchdogTimeoutMs ?? 30_000,
      ...(backend.waiterTimeoutMs ? { waiterTimeoutMs: backend.waiterTimeoutMs } : {}),
    });
  }
  if (backend.kind === 'redis-cluster') {
    const cluster = new Cluster(backend.nodes);
    const client = new RedisLockClient({
      redis: cluster,
      watchdogTimeoutMs: backend.watchdogTimeoutMs ?? 30_000,
    });
    const close = client.close.bind(client);
    client.close = async () => {
      await close();
      cluster.disconnect(); // the caller's connection: the lock client leaves it open
    };
    return client;
  }
  if (backend.kind === 'redlock') {
    const pool = new pg.Pool({ connectionString: backend.databaseUrl, max: 2 });
    pool.on('error', () => undefined); // idle connections see the test's server stop at the end
    const client = new RedlockClient({
      nodes: backend.urls,
      fencing: new PostgresTokenSource(pool),
      // A loaded 2-core test machine answers slower than the spec's tens of milliseconds.
      nodeTimeoutMs: 1_000,
      watchdogTimeoutMs: backend.watchdogTimeoutMs ?? 30_000,
    });
    const close = client.close.bind(client);
    client.close = async () => {
      await close();
      await pool.end();
    };
    return client;
  }
  if (backend.kind === 'etcd') {
    // etcd3 (gRPC) is loaded only here, when an etcd client is made.
    return new EtcdLockClient({
      hosts: backend.hosts,
      sessionTtlSeconds: backend.sessionTtlSeconds ?? 10,
      watchdogTimeoutMs: backend.watchdogTimeoutMs ?? 30_000,
    });
  }
  if (backend.kind === 'postgres') {
    // pg is loaded only here, when a PostgreSQL client is made.
    const client = new PostgresLockClient({ postgres: backend.url });
    client.on('connectionError', () => undefined); // sessions the test terminates are reported here
    return client;
  }
  if (backend.kind === 'mysql') {
    // mysql2 is loaded only here, when a MySQL client is made.
    const client = new MySqlLockClient({ mysql: backend.url });
    client.on('connectionError', () => undefined); // connections the test kills are reported here
    return client;
  }
  if (backend.kind === 'zookeeper') {
    // node-zookeeper-client is loaded only here, when a ZooKeeper client is made.
    return new ZooKeeperLockClient({
      connectString: backend.connectString,
      sessionTimeoutMs: backend.sessionTimeoutMs ?? 4_000,
      watchdogTimeoutMs: backend.watchdogTimeoutMs ?? 30_000,
      ...(backend.connectionLossPolicy ? { connectionLossPolicy: backend.connectionLossPolicy } : {}),
    });
  }
  if (backend.kind === 'local') {
    // Shares its locks only with this process's clients of the namespace: never across processes.
    return new LocalLockClient({
      namespace: backend.namespace,
      watchdogTimeoutMs: backend.watchdogTimeoutMs,
    });
  }
  throw new Error(`unknown backend ${backend.kind}`);
}
