import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** A standalone connection or a cluster client; everything in lockstock works with both. */
export type RedisClient = Redis | Cluster;

/** How callers hand lockstock a Redis: a client they own, or a URL / options for one we own. */
export type RedisSource = RedisClient | string | RedisOptions;

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/**
 * Resolves a RedisSource. `owned` tells whether lockstock created the client (and must close it).
 * Clients we create fail fast instead of queueing commands forever while Redis is down: a lock call
 * that cannot reach Redis should surface as an error within seconds, not hang.
 */
export function resolveRedis(source: RedisSource): { client: RedisClient; owned: boolean } {
  if (source instanceof Redis || source instanceof Cluster) return { client: source, owned: false };
  const defaults: RedisOptions = { maxRetriesPerRequest: 2, connectTimeout: 5_000 };
  if (typeof source === 'string') return { client: new Redis(source, defaults), owned: true };
  return { client: new Redis({ ...defaults, ...source }), owned: true };
}

/** A second connection with the same settings (pub/sub needs its own connection). */
export function duplicateClient(client: RedisClient): RedisClient {
  return isCluster(client) ? client.duplicate(undefined, { shardedSubscribers: true }) : client.duplicate();
}
