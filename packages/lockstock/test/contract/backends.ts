import { afterAll, beforeAll } from 'vitest';
import pg from 'pg';
import {
  PostgresTokenSource,
  RedisLockClient,
  RedlockClient,
  type Lock,
  type LockClient,
} from '../../src/index.js';
import {
  EtcdServer,
  httpRequest,
  MariaDbServer,
  ZooKeeperServer,
  PostgresServer,
  RedisCluster,
  RedisSentinelGroup,
  RedisServer,
  startRedisServers,
} from '@lockstock/servers';
import type { BackendCapabilities, LockClientBase } from '../../src/backend/index.js';
import { EtcdLockClient } from '../../src/etcd/index.js';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';
import { PostgresLockClient } from '../../src/postgres/index.js';
import { MySqlLockClient } from '../../src/mysql/index.js';
import { LocalLockClient } from '../../src/local/index.js';
import type { ContractBackend, ContractClientOptions } from '../../src/testing/index.js';
import type { BackendConfig } from './subjects.mjs';
import { openRedis, type RedisClientKind } from './redis-clients.mjs';

/** The module fixture processes import to make a client: its `connect(config)` reads a BackendConfig. */
export const CONNECT_MODULE = new URL('./subjects.mjs', import.meta.url);

/**
 * A built-in backend for the contract suite (lockstock/testing's ContractBackend) and for the tests
 * that start and break its servers: clients, the JSON that tells fixture processes how to connect
 * (subjects.mjs's `connect`), and the administrative way to end every hold of a lock behind its
 * holders' backs. Each backend's suite file passes its own.
 */
export interface BackendFixture<S = RedisServer> extends ContractBackend {
  readonly name: string;
  /**
   * `sessionTimeoutMs`: how long a session backend (etcd, ZooKeeper) keeps a dead client's holds;
   * backends whose holds have leases ignore it.
   */
  config(options?: ContractClientOptions): BackendConfig;
  /** What the backend says of itself: checks that depend on leases condition on it, never on a name. */
  readonly capabilities: BackendCapabilities;
  /** The servers, for fault tests (stop, pause, restart them). */
  readonly servers: readonly S[];
  client(options?: { watchdogTimeoutMs?: number }): LockClient;
  breakHolds(client: LockClient, lock: Lock): Promise<void>;
}

/** How fixture processes of a backend connect: subjects.mjs with the fixture's config. */
const processesOf = (config: BackendFixture<unknown>['config']) => ({ module: CONNECT_MODULE, config });

/** A client's backend capabilities (every client is a LockClientBase over its backend). */
const capabilitiesOf = (client: LockClient): BackendCapabilities =>
  (client as unknown as LockClientBase).backend.capabilities;

/**
 * A private redis-server for the calling test file. `client`: the Redis client the lock clients are
 * given (ioredis: a URL, the connection the lock client makes; the others: the caller's connection).
 */
export function useRedisBackend(client: RedisClientKind = 'ioredis'): BackendFixture {
  let server: RedisServer;
  const clients: LockClient[] = [];
  const connections: Array<ReturnType<typeof openRedis>> = [];
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(connections.map((c) => c.close()));
    await server.stop();
  });
  return {
    name: client === 'ioredis' ? 'redis' : `redis (${client})`,
    get processes() {
      return processesOf(this.config);
    },
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    // Holder metadata on (opt-in on Redis): the contract checks what inspect() reports with it.
    config: (options = {}) => ({ kind: 'redis', url: server.url, client, holderMetadata: true, ...options }),
    client(options = {}) {
      let redis: object | string = server.url;
      if (client !== 'ioredis') {
        const connection = openRedis(client, { url: server.url });
        connections.push(connection);
        redis = connection.client;
      }
      const locks = new RedisLockClient({ redis, holderMetadata: true, ...options });
      clients.push(locks);
      return locks;
    },
    async breakHolds(client, lock) {
      await (client as RedisLockClient).forceUnlock(lock);
    },
    get servers() {
      return [server];
    },
  };
}

/** A private 3-master Redis Cluster; clients are Cluster clients of `client` (ioredis by default). */
export function useRedisClusterBackend(client: RedisClientKind = 'ioredis'): BackendFixture {
  let cluster: RedisCluster;
  const clients: RedisLockClient[] = [];
  const connections: Array<ReturnType<typeof openRedis>> = [];
  beforeAll(async () => {
    cluster = await RedisCluster.start({ masters: 3 });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(connections.map((c) => c.close()));
    await cluster.stop();
  });
  return {
    name: client === 'ioredis' ? 'redis-cluster' : `redis-cluster (${client})`,
    get processes() {
      return processesOf(this.config);
    },
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    config: (options = {}) => ({
      kind: 'redis-cluster',
      nodes: cluster.startupNodes,
      client,
      holderMetadata: true,
      ...options,
    }),
    client(options = {}) {
      const connection = openRedis(client, { nodes: cluster.startupNodes });
      connections.push(connection);
      const locks = new RedisLockClient({ redis: connection.client, holderMetadata: true, ...options });
      clients.push(locks);
      return locks;
    },
    async breakHolds(client, lock) {
      await (client as RedisLockClient).forceUnlock(lock);
    },
    get servers() {
      return cluster.nodes;
    },
  };
}

/**
 * A private Sentinel group (a master, a replica, one sentinel); clients of `client` find the master
 * through the sentinel, as applications under Sentinel do.
 */
export function useRedisSentinelBackend(client: RedisClientKind = 'ioredis'): BackendFixture {
  let group: RedisSentinelGroup;
  const clients: RedisLockClient[] = [];
  const connections: Array<ReturnType<typeof openRedis>> = [];
  beforeAll(async () => {
    group = await RedisSentinelGroup.start();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(connections.map((c) => c.close()));
    await group.stop();
  });
  return {
    name: `redis-sentinel (${client})`,
    get processes() {
      return processesOf(this.config);
    },
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    config: (options = {}) => ({
      kind: 'redis-sentinel',
      sentinels: group.sentinels,
      name: group.masterName,
      client,
      holderMetadata: true,
      ...options,
    }),
    client(options = {}) {
      const connection = openRedis(client, { sentinels: group.sentinels, name: group.masterName });
      connections.push(connection);
      const locks = new RedisLockClient({ redis: connection.client, holderMetadata: true, ...options });
      clients.push(locks);
      return locks;
    },
    async breakHolds(client, lock) {
      await (client as RedisLockClient).forceUnlock(lock);
    },
    get servers() {
      return [group.master];
    },
  };
}

/**
 * Redlock on five private redis-servers (independent masters), fencing tokens from a private
 * PostgreSQL. Redlock offers the mutex only, so that is the subject its suite runs.
 */
export function useRedlockBackend(): BackendFixture {
  let masters: RedisServer[];
  let postgres: PostgresServer;
  let pool: pg.Pool;
  const clients: RedlockClient[] = [];
  beforeAll(async () => {
    [masters, postgres] = await Promise.all([startRedisServers(5), PostgresServer.start()]);
    pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
    pool.on('error', () => undefined); // idle connections see the server stop at the end
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await pool.end();
    await Promise.all([...masters.map((m) => m.stop()), postgres.stop()]);
  });
  const config = (options: { watchdogTimeoutMs?: number } = {}): BackendConfig => ({
    kind: 'redlock',
    urls: masters.map((m) => m.url),
    databaseUrl: postgres.url,
    ...options,
  });
  return {
    name: 'redlock',
    get processes() {
      return processesOf(this.config);
    },
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    config,
    client(options = {}) {
      // As the fixture processes connect (subjects.mjs), but with this suite's copy of the classes.
      const urls = masters.map((m) => m.url);
      const client = new RedlockClient({
        nodes: urls,
        fencing: new PostgresTokenSource(pool),
        nodeTimeoutMs: 1_000, // a loaded 2-core test machine answers slower than the spec's 5–50 ms
        ...options,
      });
      clients.push(client);
      return client as unknown as LockClient;
    },
    async breakHolds(client, lock) {
      await (client as unknown as RedlockClient).forceUnlock(lock);
    },
    get servers() {
      return masters;
    },
  };
}

/**
 * etcd's minimum lease TTL is 1.5 election timeouts, rounded up to whole seconds: 2 s with its
 * defaults. Heartbeats every 50 ms and elections after 500 ms bring it to 1 s, so a test's session can
 * be as short as the contract's leases.
 */
export const ETCD_ONE_SECOND_LEASES = ['--heartbeat-interval', '50', '--election-timeout', '500'];

/** Session TTL of the suite's etcd clients unless a test asks for another, ms. */
const ETCD_SESSION_MS = 10_000;

/** A private etcd for the calling test file. */
export function useEtcdBackend(): BackendFixture<EtcdServer> {
  let server: EtcdServer;
  const clients: EtcdLockClient[] = [];
  beforeAll(async () => {
    server = await EtcdServer.start({ args: ETCD_ONE_SECOND_LEASES });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server.stop();
  });
  const ttlSeconds = (ms = ETCD_SESSION_MS) => Math.ceil(ms / 1_000);
  return {
    name: 'etcd',
    get processes() {
      return processesOf(this.config);
    },
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    config: ({ sessionTimeoutMs, ...options } = {}) => ({
      kind: 'etcd',
      hosts: [server.endpoint],
      sessionTtlSeconds: ttlSeconds(sessionTimeoutMs),
      ...options,
    }),
    client(options = {}) {
      const client = new EtcdLockClient({
        hosts: server.endpoint,
        sessionTtlSeconds: ttlSeconds(),
        ...options,
      });
      clients.push(client);
      return client;
    },
    async breakHolds(client) {
      // An operator revokes the holder's session lease (etcdctl lease revoke): etcd deletes every key
      // on it — the holds of every lock of that client.
      const id = (client as EtcdLockClient).sessionLeaseId;
      if (id === undefined) throw new Error('the client has no etcd session to revoke');
      const answer = await httpRequest(`${server.endpoint}/v3/lease/revoke`, {
        method: 'POST',
        body: { ID: id },
      });
      if (answer.status !== 200) throw new Error(`lease revoke answered ${answer.status}: ${answer.body}`);
    },
    get servers() {
      return [server];
    },
  };
}

/**
 * A private PostgreSQL for the calling test file (advisory locks; holds end with their session: a
 * killed holder's connection closes and the server frees its locks).
 */
export function usePostgresBackend(): BackendFixture<PostgresServer> {
  let server: PostgresServer;
  const clients: PostgresLockClient[] = [];
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server.stop();
  });
  return {
    name: 'postgres',
    get processes() {
      return processesOf(this.config);
    },
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    // No session timeout to set: a dead holder's connection closes, and the server ends its session.
    config: ({ watchdogTimeoutMs } = {}) => ({ kind: 'postgres', url: server.url, watchdogTimeoutMs }),
    client(options = {}) {
      const client = new PostgresLockClient({ postgres: server.url, ...options });
      // forceUnlock ends the holders' sessions, which their clients report here.
      client.on('connectionError', () => undefined);
      clients.push(client);
      return client;
    },
    async breakHolds(client, lock) {
      // forceUnlock terminates the sessions holding the lock (pg_terminate_backend).
      await (client as PostgresLockClient).forceUnlock(lock);
    },
    get servers() {
      return [server];
    },
  };
}

/**
 * A private MariaDB for the calling test file (GET_LOCK user locks; holds end with their connection: a
 * killed holder's socket closes and the server frees its locks).
 */
export function useMySqlBackend(): BackendFixture<MariaDbServer> {
  let server: MariaDbServer;
  const clients: MySqlLockClient[] = [];
  beforeAll(async () => {
    server = await MariaDbServer.start();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server.stop();
  });
  return {
    name: 'mysql',
    get processes() {
      return processesOf(this.config);
    },
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    // No session timeout to set: a dead holder's connection closes, and the server ends its session.
    config: ({ watchdogTimeoutMs } = {}) => ({ kind: 'mysql', url: server.url, watchdogTimeoutMs }),
    client(options = {}) {
      const client = new MySqlLockClient({ mysql: server.url, ...options });
      // forceUnlock kills the holders' connections, which their clients report here.
      client.on('connectionError', () => undefined);
      clients.push(client);
      return client;
    },
    async breakHolds(client, lock) {
      // forceUnlock kills the connections holding the lock (KILL CONNECTION).
      await (client as MySqlLockClient).forceUnlock(lock);
    },
    get servers() {
      return [server];
    },
  };
}

/** ZooKeeper's tick for the suites: sessions may then be 0.5–5 s (the server bounds them to 2–20 ticks). */
export const ZOOKEEPER_TICK_MS = 250;
/** Session timeout of the suite's clients unless a check sets its own (long enough for a loaded machine). */
const ZOOKEEPER_SESSION_MS = 4_000;

/**
 * A private ZooKeeper (one JVM, a short tick so sessions can be short) for the calling test file.
 * Holds end with their session; breakHolds force-unlocks, and the holders learn it from the watch each
 * keeps on its own node.
 */
export function useZooKeeperBackend(): BackendFixture<ZooKeeperServer> {
  let server: ZooKeeperServer;
  const clients: ZooKeeperLockClient[] = [];
  beforeAll(async () => {
    server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server.stop();
  });
  return {
    name: 'zookeeper',
    get processes() {
      return processesOf(this.config);
    },
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    config: ({ sessionTimeoutMs, ...options } = {}) => ({
      kind: 'zookeeper',
      connectString: server.connectString,
      sessionTimeoutMs: sessionTimeoutMs ?? ZOOKEEPER_SESSION_MS,
      ...options,
    }),
    client(options = {}) {
      const client = new ZooKeeperLockClient({
        connectString: server.connectString,
        sessionTimeoutMs: ZOOKEEPER_SESSION_MS,
        ...options,
      });
      clients.push(client);
      return client;
    },
    async breakHolds(client, lock) {
      await (client as ZooKeeperLockClient).forceUnlock(lock);
    },
    get servers() {
      return [server];
    },
  };
}

/**
 * The local (in-process) backend: clients of this process sharing one namespace of their own. It has
 * no servers; holds are lost behind a holder's back by forceUnlock, as on the other backends. It has no
 * `processes` (its holds cross no process boundary): the contract runs its contenders as clients of
 * this process and leaves the checks of a holder in another process to test/local.
 */
export function useLocalBackend(): BackendFixture<never> {
  const namespace = `contract-${process.pid}-${Date.now()}`;
  const clients: LocalLockClient[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });
  const client = (options: { watchdogTimeoutMs?: number } = {}) => {
    const made = new LocalLockClient({ namespace, ...options });
    clients.push(made);
    return made;
  };
  return {
    name: 'local',
    get capabilities() {
      return capabilitiesOf(this.client());
    },
    config: ({ watchdogTimeoutMs } = {}) => ({ kind: 'local', namespace, watchdogTimeoutMs }),
    client,
    async breakHolds(locks, lock) {
      await (locks as LocalLockClient).forceUnlock(lock);
    },
    servers: [],
  };
}
