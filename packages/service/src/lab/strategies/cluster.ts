import { Cluster } from 'ioredis';
import { RedisCluster } from '@lockstock/servers';
import { saleContext, type SaleContext } from '../../sale/context/context.js';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';

/**
 * The lab's Redis Cluster (3 masters), for the strategies that split one sale's stock over masters:
 * started once per lab by the first of them to prepare, its seed nodes handed to the workers in the
 * run's options, stopped by the strategies' teardown.
 */
let cluster: Promise<RedisCluster> | undefined;
let stopping: Promise<void> | undefined;
/** One client, its sale context (and one id generator) per process and Cluster: workers serve many runs. */
const clients = new Map<
  string,
  { redis: Cluster; context: SaleContext; ids?: Promise<SnowflakeIdGenerator> }
>();

export const CLUSTER_MASTERS = 3;

/** The lab's Cluster (started on first use), as seed nodes "host:port,host:port,…". */
export async function labCluster(): Promise<string> {
  cluster ??= RedisCluster.start({ masters: CLUSTER_MASTERS });
  return (await cluster).startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
}

function entry(nodes: string) {
  let found = clients.get(nodes);
  if (!found) {
    const seeds = nodes.split(',').map((node) => {
      const [host, port] = node.split(':');
      return { host: host as string, port: Number(port) };
    });
    const redis = new Cluster(seeds);
    found = { redis, context: saleContext(redis) };
    clients.set(nodes, found);
  }
  return found;
}

export const clusterClient = (nodes: string): Cluster => entry(nodes).redis;

/** The sale context on the Cluster's client (built once with it). */
export const clusterContext = (nodes: string): SaleContext => entry(nodes).context;

/** Order ids on the Cluster: one snowflake generator per process (it leases a worker id). */
export function clusterIds(nodes: string): Promise<SnowflakeIdGenerator> {
  const found = entry(nodes);
  found.ids ??= (async () => {
    const ids = new SnowflakeIdGenerator(found.context);
    await ids.start();
    return ids;
  })();
  return found.ids;
}

/**
 * Closes the clients and stops the Cluster. Both Cluster strategies tear down, at once: the second
 * call waits for the first (closing a client twice would strand a command in its queue).
 */
export function stopLabCluster(): Promise<void> {
  stopping ??= (async () => {
    const started = cluster;
    cluster = undefined;
    const open = [...clients.values()];
    clients.clear();
    for (const { redis, ids } of open) {
      await (await ids?.catch(() => undefined))?.stop();
      redis.disconnect();
    }
    await (await started?.catch(() => undefined))?.stop();
  })().finally(() => {
    stopping = undefined;
  });
  return stopping;
}
