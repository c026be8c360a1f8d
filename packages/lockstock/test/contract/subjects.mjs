// How the built-in backends' fixture processes connect: `connect(config)` makes a client of the
// backend a BackendConfig (JSON) describes — the module lockstock/testing's fixture processes import
// for the built-in backends (backends.ts) — and the contract's lock kinds, by name.
import pg from 'pg';
import { PostgresTokenSource, RedisLockClient, RedlockClient } from 'lockstock';
import { EtcdLockClient } from 'lockstock/etcd';
import { ZooKeeperLockClient } from 'lockstock/zookeeper';
import { PostgresLockClient } from 'lockstock/postgres';
import { MySqlLockClient } from 'lockstock/mysql';
import { LocalLockClient } from 'lockstock/local';
import { CONTRACT_SUBJECTS } from 'lockstock/testing';
import { openRedis } from './redis-clients.mjs';

/** The contract's lock kinds (lockstock/testing's CONTRACT_SUBJECTS), for the fixture processes. */
export const SUBJECTS = CONTRACT_SUBJECTS;

/** A lock client for a backend described in JSON (fixture processes receive it on their command line). */
export function connect(backend) {
  if (backend.kind === 'redis' || backend.kind === 'redis-cluster' || backend.kind === 'redis-sentinel') {
    const options = {
      watchdogTimeoutMs: backend.watchdogTimeoutMs ?? 30_000,
      holderMetadata: backend.holderMetadata ?? false,
      ...(backend.waiterTimeoutMs ? { waiterTimeoutMs: backend.waiterTimeoutMs } : {}),
    };
    if (backend.kind === 'redis' && (backend.client ?? 'ioredis') === 'ioredis') {
      return new RedisLockClient({ redis: backend.url, ...options }); // a connection the client owns
    }
    const target =
      backend.kind === 'redis'
        ? { url: backend.url }
        : backend.kind === 'redis-sentinel'
          ? { sentinels: backend.sentinels, name: backend.name }
          : { nodes: backend.nodes };
    const connection = openRedis(backend.client ?? 'ioredis', target);
    const client = new RedisLockClient({ redis: connection.client, ...options });
    const close = client.close.bind(client);
    client.close = async () => {
      await close();
      await connection.close(); // the caller's connection: the lock client leaves it open
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
