import { RedisLockClient, RedlockClient } from 'lockstock';
import { EtcdLockClient } from 'lockstock/etcd';
import { MySqlLockClient } from 'lockstock/mysql';
import { PostgresLockClient } from 'lockstock/postgres';
import { ZooKeeperLockClient } from 'lockstock/zookeeper';
import { advisoryLock, etcd3Lock, etcdFloor, mysqlFloor, postgresFloor, zookeeperFloor } from './stores.js';
import {
  connect,
  disconnect,
  type ClientSetting,
  type Connections,
  type Target,
  type Topology,
} from './targets.js';

/**
 * The libraries compared; the peers are dev dependencies, loaded only when benchmarked. `floor` is no
 * library: the raw commands of one acquire + release on the same client, without any library
 * (`SET NX PX` + a compare-and-delete script; on Redlock's masters, both on all five at once) — what
 * no lock on that store can beat.
 */
export const LIBRARIES = [
  'lockstock',
  'redlock',
  'redis-semaphore',
  'redlock-universal',
  'etcd3',
  'advisory-lock',
  'floor',
] as const;
export type LibraryName = (typeof LIBRARIES)[number];

/**
 * Lock kinds, as a row's `kind`: the primitive the library used. `read-write` is lockstock's
 * read-write lock (the read lock alone in the uncontended scenario); `redlock` a mutex held on a
 * majority of independent masters.
 */
export const KINDS = ['mutex', 'fair', 'read-write', 'semaphore', 'redlock'] as const;
export type Kind = (typeof KINDS)[number];

/** What each library offers of those kinds (a peer's single-node Redlock is its mutex). */
export const PRIMITIVES: Record<LibraryName, readonly Kind[]> = {
  lockstock: KINDS,
  redlock: ['mutex', 'redlock'],
  'redis-semaphore': ['mutex', 'semaphore', 'redlock'],
  'redlock-universal': ['mutex', 'redlock'],
  etcd3: ['mutex'],
  'advisory-lock': ['mutex'],
  floor: ['mutex', 'redlock'],
};

/** The stores that are not Redis, each with the peers that run on it (no Node library offers ZooKeeper locks: no Curator). */
const STORE_PEERS: Partial<Record<Topology, readonly LibraryName[]>> = {
  etcd: ['etcd3'],
  zookeeper: [],
  postgres: ['advisory-lock'],
  mysql: [],
};

/** Where each library runs: ours and the floor everywhere, a store's peers on it, the Redis libraries on Redis. */
export function runsOn(library: LibraryName, topology: Topology): boolean {
  if (library === 'lockstock' || library === 'floor') return true;
  const onStore = STORE_PEERS[topology];
  if (onStore) return onStore.includes(library);
  return !Object.values(STORE_PEERS).some((peers) => peers.includes(library));
}

/** Libraries a lockstock row is compared with as its peers (the floor is its own column). */
export const isPeer = (library: LibraryName): boolean => library !== 'lockstock' && library !== 'floor';

/**
 * What a team without lockstock's kind would use from a peer: a mutex stands in for the fair lock
 * and for the read-write lock (a mutex around every section).
 */
export const PEER_KIND: Record<Kind, Kind> = {
  mutex: 'mutex',
  fair: 'mutex',
  'read-write': 'mutex',
  semaphore: 'semaphore',
  redlock: 'redlock',
};

/** Read sections share a read-write lock; everything else takes the lock exclusively. */
export type Access = 'read' | 'write';

export interface HeldLock {
  release(): Promise<unknown>;
}

/** One library's primitive behind one interface: acquire (waiting as long as it takes), close. */
export interface LockAdapter {
  acquire(key: string, access?: Access): Promise<HeldLock>;
  close(): Promise<void>;
}

/** Which primitive to build, where, with which ioredis settings; plain data (sent to workers). */
export interface AdapterSpec {
  library: LibraryName;
  kind: Kind;
  target: Target;
  setting: ClientSetting;
  /** Permits of a semaphore; every holder of a key passes the same number. */
  permits: number;
}

async function importPeer<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch {
    throw new Error(
      `The lock benchmark compares against "${name}"; install it first: npm install --no-save ${name}`,
    );
  }
}

/** Fails with the install hint before anything starts if a peer library selected is missing. */
export async function assertPeersInstalled(libraries: readonly LibraryName[]): Promise<void> {
  for (const library of libraries.filter(isPeer)) await importPeer(library);
}

/** A lock's lease in the benchmark, where a library needs one (peers' defaults are 10 s too). */
const LEASE_MS = 10_000;

/**
 * Builds the adapter of `spec`, on connections of its own. Every library uses its defaults (retry
 * intervals, leases renewed or not) as a team would out of the box; lockstock's watchdog renews its
 * leases like redis-semaphore's refresh timer.
 */
export async function createAdapter(spec: AdapterSpec): Promise<LockAdapter> {
  if (!PRIMITIVES[spec.library].includes(spec.kind))
    throw new Error(`${spec.library} has no ${spec.kind} lock to benchmark`);
  const connections = await connect(spec.target, spec.setting);
  const close = async () => disconnect(connections);
  try {
    switch (spec.library) {
      case 'lockstock':
        return lockstock(spec, connections);
      case 'redlock':
        return { ...(await redlock(connections)), close };
      case 'redis-semaphore':
        return { ...(await redisSemaphore(spec, connections)), close };
      case 'redlock-universal':
        return { ...(await redlockUniversal(connections)), close };
      case 'etcd3':
        if (connections.topology !== 'etcd') throw new Error('the etcd3 lock runs on etcd');
        return { ...(await etcd3Lock(connections.client)), close };
      case 'advisory-lock':
        if (connections.topology !== 'postgres') throw new Error('advisory-lock runs on PostgreSQL');
        return { ...advisoryLock(await importPeer('advisory-lock'), connections.url), close };
      case 'floor':
        if (connections.topology === 'etcd') return { ...etcdFloor(connections.client), close };
        if (connections.topology === 'zookeeper') return { ...zookeeperFloor(connections.client), close };
        if (connections.topology === 'postgres' || connections.topology === 'mysql') {
          const raw =
            connections.topology === 'postgres'
              ? postgresFloor(connections.url)
              : mysqlFloor(connections.url);
          return { acquire: raw.acquire, close: async () => raw.close?.() };
        }
        return { ...floor(connections), close };
    }
  } catch (error) {
    disconnect(connections);
    throw error;
  }
}

type Acquire = Pick<LockAdapter, 'acquire'>;

/**
 * Test hook: LOCKSTOCK_TEST_REDLOCK_NODE_TIMEOUT_MS gives lockstock's Redlock votes longer than the
 * client's default 50 ms. The end-to-end test sets it: on a loaded machine (load average 7–10) a
 * master's answer took longer than 50 ms and the row failed with timed-out votes. Figures are
 * measured with the default.
 */
function testRedlockNodeTimeoutMs(): number | undefined {
  const ms = Number(process.env.LOCKSTOCK_TEST_REDLOCK_NODE_TIMEOUT_MS);
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

function lockstock(spec: AdapterSpec, connections: Connections): LockAdapter {
  if (spec.kind === 'redlock') {
    if (connections.topology !== 'masters-5') throw new Error('lockstock redlock runs on masters-5');
    // Without a fencing token source, as the peers (none of them fences); tokens are then 0.
    const nodeTimeoutMs = testRedlockNodeTimeoutMs();
    const redlock = new RedlockClient({
      nodes: connections.clients,
      ...(nodeTimeoutMs === undefined ? {} : { nodeTimeoutMs }),
    });
    return {
      acquire: (key) => redlock.mutex(key).acquire(),
      close: async () => {
        await redlock.close();
        disconnect(connections);
      },
    };
  }
  if (connections.topology === 'masters-5') throw new Error(`lockstock ${spec.kind} runs on one Redis`);
  if (connections.topology === 'zookeeper') {
    if (spec.kind !== 'mutex') throw new Error(`lockstock ${spec.kind} is benchmarked on Redis`);
    const zk = new ZooKeeperLockClient({ client: connections.client });
    return {
      acquire: (key) => zk.mutex(key).acquire(),
      close: async () => {
        await zk.close();
        disconnect(connections);
      },
    };
  }
  if (connections.topology === 'postgres') {
    if (spec.kind !== 'mutex') throw new Error(`lockstock ${spec.kind} is benchmarked on Redis`);
    // Each hold pins a connection, and so does each waiting caller: room for every loop of a row.
    const locks = new PostgresLockClient({ postgres: connections.url, maxConnections: POSTGRES_CONNECTIONS });
    return {
      acquire: (key) => locks.mutex(key).acquire(),
      close: async () => {
        await locks.close();
        disconnect(connections);
      },
    };
  }
  if (connections.topology === 'mysql') {
    if (spec.kind !== 'mutex') throw new Error(`lockstock ${spec.kind} is benchmarked on Redis`);
    // As on PostgreSQL: a connection per hold and per waiting caller.
    const locks = new MySqlLockClient({ mysql: connections.url, maxConnections: POSTGRES_CONNECTIONS });
    return {
      acquire: (key) => locks.mutex(key).acquire(),
      close: async () => {
        await locks.close();
        disconnect(connections);
      },
    };
  }
  if (connections.topology === 'etcd') {
    if (spec.kind !== 'mutex') throw new Error(`lockstock ${spec.kind} is benchmarked on Redis`);
    const etcd = new EtcdLockClient({ etcd: connections.client });
    return {
      acquire: (key) => etcd.mutex(key).acquire(),
      close: async () => {
        await etcd.close();
        disconnect(connections);
      },
    };
  }
  const locks = new RedisLockClient({ redis: connections.client });
  const acquire: LockAdapter['acquire'] = {
    mutex: (key: string) => locks.mutex(key).acquire(),
    fair: (key: string) => locks.fair(key).acquire(),
    'read-write': (key: string, access: Access = 'write') => locks.readWrite(key)[access].acquire(),
    semaphore: (key: string) => locks.semaphore(key, { permits: spec.permits }).acquire(),
  }[spec.kind];
  return {
    acquire,
    close: async () => {
      await locks.close();
      disconnect(connections);
    },
  };
}

/** Connections of lockstock's pool on PostgreSQL and MySQL: the 64 loops of an uncontended row, and a few more. */
const POSTGRES_CONNECTIONS = 72;

/** The clients a peer is given: the one client, or the 5 masters. */
function clientsOf(connections: Connections) {
  if (
    connections.topology === 'etcd' ||
    connections.topology === 'zookeeper' ||
    connections.topology === 'postgres' ||
    connections.topology === 'mysql'
  )
    throw new Error('the Redis libraries run on Redis');
  return connections.topology === 'masters-5' ? connections.clients : [connections.client];
}

async function redlock(connections: Connections): Promise<Acquire> {
  type RedlockModule = typeof import('redlock');
  const { default: Redlock, ExecutionError } = await importPeer<RedlockModule>('redlock');
  // Default retry settings (10 × 200 ms ± 200 ms); one client, or the 5 masters for Redlock proper.
  const redlock = new Redlock(clientsOf(connections));
  return {
    // redlock gives up after its retries; the benchmark loop keeps asking, like an app would.
    acquire: async (key) => {
      for (;;) {
        try {
          return await redlock.acquire([key], LEASE_MS);
        } catch (error) {
          if (!(error instanceof ExecutionError)) throw error;
        }
      }
    },
  };
}

async function redisSemaphore(spec: AdapterSpec, connections: Connections): Promise<Acquire> {
  type SemaphoreModule = typeof import('redis-semaphore');
  const { Mutex, Semaphore, RedlockMutex, TimeoutError } =
    await importPeer<SemaphoreModule>('redis-semaphore');
  // One object per acquisition (it carries the holder's identifier). Defaults: 10 s lock refreshed
  // in the background, 10 ms retry interval, 10 s acquire timeout.
  if (
    connections.topology === 'etcd' ||
    connections.topology === 'zookeeper' ||
    connections.topology === 'postgres' ||
    connections.topology === 'mysql'
  )
    throw new Error('redis-semaphore runs on Redis');
  const create = (key: string) => {
    if (connections.topology === 'masters-5') return new RedlockMutex(connections.clients, key);
    if (spec.kind === 'semaphore') return new Semaphore(connections.client, key, spec.permits);
    return new Mutex(connections.client, key);
  };
  return {
    acquire: async (key) => {
      const lock = create(key);
      for (;;) {
        try {
          await lock.acquire();
          return lock;
        } catch (error) {
          if (!(error instanceof TimeoutError)) throw error;
        }
      }
    },
  };
}

async function redlockUniversal(connections: Connections): Promise<Acquire> {
  type UniversalModule = typeof import('redlock-universal');
  const { createLock, createRedlock, IoredisAdapter, LockAcquisitionError } =
    await importPeer<UniversalModule>('redlock-universal');
  type UniversalLock = ReturnType<typeof createLock>;
  const adapters = clientsOf(connections).map((client) => IoredisAdapter.from(client));
  // A lock object per key (each acquire gets a fresh value and handle), created as the README shows;
  // defaults: 3 retries 100 ms apart (200 ms for Redlock), circuit breaker on.
  const locks = new Map<string, UniversalLock>();
  const lockFor = (key: string): UniversalLock => {
    let lock = locks.get(key);
    if (!lock) {
      lock =
        connections.topology === 'masters-5'
          ? createRedlock({ adapters, key, ttl: LEASE_MS })
          : createLock({ adapter: adapters[0]!, key, ttl: LEASE_MS });
      locks.set(key, lock);
    }
    return lock;
  };
  return {
    acquire: async (key) => {
      const lock = lockFor(key);
      for (;;) {
        try {
          const handle = await lock.acquire();
          return { release: () => lock.release(handle) };
        } catch (error) {
          if (!(error instanceof LockAcquisitionError)) throw error;
        }
      }
    },
  };
}

/** Deletes the key only if it still holds the caller's value (the floor's release). */
const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * The floor: one acquire + release as raw commands on the same clients — `SET key value NX PX`, then
 * the compare-and-delete script by EVALSHA (ioredis' defineCommand), on every master at once for
 * Redlock's five. A refused SET retries at once (uncontended rows never see one).
 */
function floor(connections: Connections): Acquire {
  const clients = clientsOf(connections);
  for (const client of clients)
    client.defineCommand('floorRelease', { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
  type WithRelease = { floorRelease(key: string, value: string): Promise<number> };
  let counter = 0;
  return {
    acquire: async (key) => {
      const value = `floor-${++counter}`;
      for (;;) {
        const votes = await Promise.all(clients.map((c) => c.set(key, value, 'PX', LEASE_MS, 'NX')));
        if (votes.filter((v) => v === 'OK').length > clients.length / 2) break;
      }
      return {
        release: () =>
          Promise.all(clients.map((c) => (c as unknown as WithRelease).floorRelease(key, value))),
      };
    },
  };
}
