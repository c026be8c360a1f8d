import { readdirSync, readFileSync } from 'node:fs';
import { Etcd3 } from 'etcd3';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import zookeeper from 'node-zookeeper-client';
import {
  EtcdServer,
  MariaDbServer,
  PostgresServer,
  RedisCluster,
  RedisServer,
  startRedisServers,
  ZooKeeperServer,
} from '@lockstock/servers';

/**
 * Where a row's locks live:
 * - `single`: one redis-server;
 * - `cluster`: a Redis Cluster of 3 masters (no replicas), through an ioredis `Cluster` client;
 * - `masters-5`: 5 independent redis-servers (no replication between them), the Redlock setting;
 * - `etcd`: one etcd member (lockstock's etcd backend, the etcd3 package's lock);
 * - `zookeeper`: one standalone ZooKeeper (lockstock's ZooKeeper backend; Node has no Curator);
 * - `postgres`: one PostgreSQL (lockstock's PostgreSQL backend, the advisory-lock package);
 * - `mysql`: one MariaDB (lockstock's MySQL backend; no Node package offers GET_LOCK locks to compare).
 */
export const TOPOLOGIES = [
  'single',
  'cluster',
  'masters-5',
  'etcd',
  'zookeeper',
  'postgres',
  'mysql',
] as const;
export type Topology = (typeof TOPOLOGIES)[number];

/** ioredis settings of a benchmark run; every library in a run gets the same ones. */
export const CLIENT_SETTINGS = ['default', 'autoPipelining'] as const;
export type ClientSetting = (typeof CLIENT_SETTINGS)[number];

/** How to reach a topology; plain data, so it can be sent to worker processes. */
export type Target =
  | { topology: 'single'; url: string }
  | { topology: 'cluster'; nodes: Array<{ host: string; port: number }> }
  | { topology: 'masters-5'; urls: string[] }
  | { topology: 'etcd'; endpoint: string; pid: number }
  | { topology: 'zookeeper'; connectString: string; pid: number }
  | { topology: 'postgres'; url: string; pid: number }
  | { topology: 'mysql'; url: string; pid: number };

export function redisOptions(setting: ClientSetting): RedisOptions {
  return setting === 'autoPipelining' ? { enableAutoPipelining: true } : {};
}

/** The connections of one library in one row: what its constructor is given. */
export type Connections =
  | { topology: 'single'; client: Redis }
  | { topology: 'cluster'; client: Cluster }
  | { topology: 'masters-5'; clients: Redis[] }
  | { topology: 'etcd'; client: Etcd3 }
  | { topology: 'zookeeper'; client: zookeeper.Client }
  | { topology: 'postgres'; url: string }
  | { topology: 'mysql'; url: string };

/** Opens connections to `target` with the run's ioredis settings, and waits until they answer. */
export async function connect(target: Target, setting: ClientSetting): Promise<Connections> {
  const options = redisOptions(setting);
  switch (target.topology) {
    case 'single': {
      const client = new Redis(target.url, options);
      await client.ping();
      return { topology: 'single', client };
    }
    case 'cluster': {
      // The same options for every node connection, and auto-pipelining on the Cluster itself.
      const client = new Cluster(target.nodes, { redisOptions: options, ...options });
      await client.ping();
      return { topology: 'cluster', client };
    }
    case 'masters-5': {
      const clients = target.urls.map((url) => new Redis(url, options));
      await Promise.all(clients.map((client) => client.ping()));
      return { topology: 'masters-5', clients };
    }
    case 'etcd': {
      // One gRPC channel per library, as an application has (ioredis settings do not apply).
      const client = new Etcd3({ hosts: target.endpoint });
      await client.get('bench-ping').string();
      return { topology: 'etcd', client };
    }
    case 'zookeeper': {
      const client = zookeeper.createClient(target.connectString, { sessionTimeout: 30_000, retries: 0 });
      await new Promise<void>((resolve) => {
        client.once('connected', () => resolve());
        client.connect();
      });
      return { topology: 'zookeeper', client };
    }
    case 'postgres':
      // Every library on PostgreSQL opens its own connections (pinned per hold, or per acquisition).
      return { topology: 'postgres', url: target.url };
    case 'mysql':
      // Likewise on MySQL: a user lock lives in its connection.
      return { topology: 'mysql', url: target.url };
  }
}

/** The address of every Redis of `target` (a cluster's masters; none for etcd). */
function serverUrls(target: Target): string[] {
  if (
    target.topology === 'etcd' ||
    target.topology === 'zookeeper' ||
    target.topology === 'postgres' ||
    target.topology === 'mysql'
  )
    return [];
  if (target.topology === 'single') return [target.url];
  if (target.topology === 'masters-5') return target.urls;
  return target.nodes.map((node) => `redis://${node.host}:${node.port}`);
}

/**
 * Reads the CPU time (user + system, µs) the servers of `target` have used so far, summed, on
 * connections of its own (idle while a row runs): what a lock pair costs on the Redis side.
 */
export function openRedisCpuReader(target: Target): { read(): Promise<number>; close(): void } {
  if (target.topology === 'etcd' || target.topology === 'zookeeper' || target.topology === 'mysql') {
    // etcd, ZooKeeper and mariadbd (one process, a thread per connection): read the process's.
    return { read: async () => processCpuUs(target.pid).own, close: () => undefined };
  }
  if (target.topology === 'postgres') {
    // A backend process per connection: the postmaster's own, its ended children's, the live ones'.
    return { read: async () => postgresCpuUs(target.pid), close: () => undefined };
  }
  const clients = serverUrls(target).map((url) => new Redis(url));
  const cpuOf = async (client: Redis) => {
    const info = await client.info('cpu');
    const seconds = (field: string) => Number(new RegExp(`${field}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
  };
  return {
    read: async () => (await Promise.all(clients.map(cpuOf))).reduce((sum, us) => sum + us, 0),
    close: () => clients.forEach((client) => client.disconnect()),
  };
}

const TICKS_PER_SECOND = 100;

/** CPU time of a process from /proc (µs): its own (utime + stime), its waited-for children's, its parent. */
function processCpuUs(pid: number): { own: number; children: number; ppid: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const us = (ticks: number) => (ticks / TICKS_PER_SECOND) * 1e6;
  return {
    own: us(Number(fields[11]) + Number(fields[12])),
    children: us(Number(fields[13]) + Number(fields[14])),
    ppid: Number(fields[1]),
  };
}

function postgresCpuUs(postmaster: number): number {
  const main = processCpuUs(postmaster);
  let total = main.own + main.children;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const child = processCpuUs(Number(entry));
      if (child.ppid === postmaster) total += child.own;
    } catch {
      // It ended meanwhile: its time is in the postmaster's children's now.
    }
  }
  return total;
}

export function disconnect(connections: Connections): void {
  if (connections.topology === 'postgres' || connections.topology === 'mysql') return; // each library closes its own
  if (connections.topology === 'etcd' || connections.topology === 'zookeeper') connections.client.close();
  else if (connections.topology === 'masters-5') connections.clients.forEach((client) => client.disconnect());
  else connections.client.disconnect();
}

/** The servers of a benchmark: only those its rows need, private unless a single Redis URL is given. */
export class BenchServers {
  private constructor(
    private readonly targets: Map<Topology, Target>,
    private readonly stops: Array<() => Promise<void>>,
  ) {}

  static async start(topologies: ReadonlySet<Topology>, singleUrl?: string): Promise<BenchServers> {
    const targets = new Map<Topology, Target>();
    const stops: Array<() => Promise<void>> = [];
    const servers = new BenchServers(targets, stops);
    const starters: Record<Topology, () => Promise<void>> = {
      single: async () => {
        if (singleUrl) {
          targets.set('single', { topology: 'single', url: singleUrl });
          return;
        }
        const server = await RedisServer.start();
        stops.push(() => server.stop());
        targets.set('single', { topology: 'single', url: server.url });
      },
      'masters-5': async () => {
        const masters: RedisServer[] = await startRedisServers(5);
        stops.push(() => Promise.all(masters.map((m) => m.stop())).then(() => undefined));
        targets.set('masters-5', { topology: 'masters-5', urls: masters.map((m) => m.url) });
      },
      etcd: async () => {
        const etcd = await EtcdServer.start();
        stops.push(() => etcd.stop());
        targets.set('etcd', { topology: 'etcd', endpoint: etcd.endpoint, pid: etcd.pid as number });
      },
      zookeeper: async () => {
        const zk = await ZooKeeperServer.start();
        stops.push(() => zk.stop());
        targets.set('zookeeper', {
          topology: 'zookeeper',
          connectString: zk.connectString,
          pid: zk.pid as number,
        });
      },
      postgres: async () => {
        const postgres = await PostgresServer.start();
        stops.push(() => postgres.stop());
        targets.set('postgres', { topology: 'postgres', url: postgres.url, pid: postgres.pid as number });
      },
      mysql: async () => {
        const mariadb = await MariaDbServer.start();
        stops.push(() => mariadb.stop());
        targets.set('mysql', { topology: 'mysql', url: mariadb.url, pid: mariadb.pid as number });
      },
      cluster: async () => {
        const cluster = await RedisCluster.start({ masters: 3 });
        stops.push(() => cluster.stop());
        targets.set('cluster', { topology: 'cluster', nodes: cluster.startupNodes });
      },
    };
    // All at once: most of a start is waiting (a JVM, initdb, a Cluster agreeing on its slots), and
    // one after another they took a good part of a short run.
    const started = await Promise.allSettled(
      TOPOLOGIES.filter((t) => topologies.has(t)).map((t) => starters[t]()),
    );
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await servers.stop(); // those that did start
      throw failed.reason;
    }
    return servers;
  }

  target(topology: Topology): Target {
    const target = this.targets.get(topology);
    if (!target) throw new Error(`no ${topology} servers were started for this benchmark`);
    return target;
  }

  /** One Redis of every topology started, for describing the machine. */
  get anyUrl(): string | undefined {
    return [...this.targets.values()].flatMap(serverUrls)[0];
  }

  async stop(): Promise<void> {
    await Promise.all(this.stops.splice(0).map((stop) => stop()));
  }
}
