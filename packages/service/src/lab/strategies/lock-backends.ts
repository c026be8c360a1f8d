import { EtcdLockClient } from 'lockstock/etcd';
import { MySqlLockClient } from 'lockstock/mysql';
import { PostgresLockClient } from 'lockstock/postgres';
import { ZooKeeperLockClient } from 'lockstock/zookeeper';
import type { LabServerKind } from '../servers.js';
import type { LabEnv } from '../types.js';
import { lockSale } from './lock-sale.js';

/** The address of an extra server the strategy declared (the runner started it or was given it). */
function serverOf(env: LabEnv, kind: LabServerKind): string {
  const address = env.servers[kind];
  if (address === undefined) throw new Error(`the lab has no ${kind} server (the strategy must list it)`);
  return address;
}

const close = (client: { close(): Promise<void> }) => client.close();

/** Seeds 003, 004: Curator's InterProcessMutex recipe, lockstock's ZooKeeper mutex. */
export const zookeeperLock = lockSale({
  name: 'zookeeper-lock',
  lockBackend: 'ZooKeeper',
  title: 'ZooKeeper lock (lockstock ZooKeeperLockClient)',
  claim:
    'Distributed-lock posts (Apache Curator’s InterProcessMutex recipe): an ephemeral sequential node per contender under the lock’s node; the lowest holds it, each other watches only the one before it (no herd), and a crashed holder’s node goes with its session. CP, slower than Redis.',
  expectation: 'correct',
  note: 'Correct here. Its hold is its session: a holder paused past the session timeout loses its node while it still runs (lockstock aborts its signal on the lost connection, but a write already under way lands) — fence the resource with the node’s czxid token. Every hand-off costs ZooKeeper a delete, a watch event and the next holder’s look at the children.',
  servers: ['zookeeper'],
  client: (env) =>
    env.shared(
      'zookeeper',
      () => new ZooKeeperLockClient({ connectString: serverOf(env, 'zookeeper') }),
      close,
    ),
});

/** Seed 004: etcd's concurrency.Mutex, lockstock's etcd mutex. */
export const etcdLock = lockSale({
  name: 'etcd-lock',
  lockBackend: 'etcd',
  title: 'etcd lock (lockstock EtcdLockClient)',
  claim:
    'Distributed-lock posts: etcd as the CP lock service — a key per contender on the session’s lease, the lowest create revision holds, each waiter watches the key just before its own; the lease’s end frees a crashed holder’s key.',
  expectation: 'correct',
  note: 'Correct here. A lease lock all the same: Jepsen found etcd locks cannot guarantee mutual exclusion in asynchronous networks (a paused holder outlives its lease) — fence the resource with the key’s create revision. Every acquire and release is a Raft write.',
  servers: ['etcd'],
  client: (env) => env.shared('etcd', () => new EtcdLockClient({ hosts: serverOf(env, 'etcd') }), close),
});

/** The database's own lock (seeds 003, 004 "基于数据库实现分布式锁"): a PostgreSQL advisory lock. */
export const postgresAdvisoryLock = lockSale({
  name: 'postgres-advisory-lock',
  lockBackend: 'PostgreSQL',
  title: 'PostgreSQL advisory lock (lockstock PostgresLockClient)',
  claim:
    'Distributed-lock posts (“a lock in the database”): a lock in the database everyone already runs — here pg_advisory_lock on a pinned session, waiters queued by PostgreSQL itself, released by the holder or by its connection’s end.',
  expectation: 'correct',
  note: 'Correct here. The hold lives as long as its connection: a dropped connection frees the lock at once (lockstock aborts the hold’s signal), a holder stalled with its connection open blocks everyone. Each holder and each waiter pins a connection. Behind a transaction-mode pooler (pgbouncer) session advisory locks are silently shared: lockstock refuses them there.',
  client: (env) =>
    env.shared('postgres-locks', () => new PostgresLockClient({ postgres: env.databaseUrl }), close),
});

/** The database's own lock on MySQL (seeds 003, 004 "基于数据库实现分布式锁"): GET_LOCK. */
export const mysqlLock = lockSale({
  name: 'mysql-lock',
  lockBackend: 'MySQL',
  title: 'MySQL user lock, GET_LOCK (lockstock MySqlLockClient)',
  claim:
    'Distributed-lock posts (“a lock in the database”): a lock in the database everyone already runs — here MySQL’s (MariaDB’s) GET_LOCK on a pinned connection, waiters queued by the server, released by the holder or by its connection’s end.',
  expectation: 'correct',
  note: 'Correct here. As with PostgreSQL’s advisory locks the hold lives as long as its connection (a killed one frees the lock and aborts the hold’s signal; a holder stalled with its connection open blocks everyone), and each holder and waiter pins a connection. Names are at most 64 characters and case-insensitive on the server: lockstock hashes the long or mixed-case ones.',
  servers: ['mysql'],
  client: (env) =>
    env.shared('mysql-locks', () => new MySqlLockClient({ mysql: serverOf(env, 'mysql') }), close),
});
