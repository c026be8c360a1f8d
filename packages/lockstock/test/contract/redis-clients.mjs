// The Redis clients lockstock accepts, opened the way their users open them, for the contract suite
// and the Redis suites parametrised by client (the test process and the fixture processes alike).
import { Cluster as IoCluster, Redis as IoRedis } from 'ioredis';
import { Cluster as ValkeyCluster, Redis as ValkeyRedis } from 'iovalkey';
import { createClient, createCluster, createSentinel } from 'redis';

/** The client kinds, ioredis first (the default everywhere). */
export const REDIS_CLIENT_KINDS = ['ioredis', 'node-redis', 'iovalkey'];

/**
 * A connection of `kind` to one Redis (`url`), a Cluster (`nodes`) or a Sentinel-watched master
 * (`sentinels` + `name`), owned by the caller: `close()` ends it.
 */
export function openRedis(kind, target) {
  if (kind === 'node-redis') {
    const client = target.nodes
      ? createCluster({ rootNodes: target.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) })
      : target.sentinels
        ? createSentinel({ name: target.name, sentinelRootNodes: target.sentinels })
        : createClient({ url: target.url });
    client.on('error', () => undefined); // connection errors are the tests' to provoke
    client.connect().catch(() => undefined);
    return { client, close: () => (client.isOpen ? client.close().catch(() => undefined) : undefined) };
  }
  const [Redis, Cluster] = kind === 'iovalkey' ? [ValkeyRedis, ValkeyCluster] : [IoRedis, IoCluster];
  const client = target.nodes
    ? new Cluster(target.nodes)
    : target.sentinels
      ? new Redis({ sentinels: target.sentinels, name: target.name })
      : new Redis(target.url);
  client.on('error', () => undefined);
  return { client, close: () => client.disconnect() };
}
