import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ORDER_GROUP } from './keys.js';

/**
 * The service's Redis: it depends on ioredis itself and uses its whole command set (streams, sets,
 * MULTI, `call`). lockstock's `RedisClient` is narrower on purpose — the commands the locks call,
 * matched by shape — and every `SaleRedis` satisfies it, so one connection serves both.
 */
export type SaleRedis = Redis | Cluster;

const CLUSTER_SCHEME = 'redis-cluster://';

/**
 * Connects to `url`: `redis://…` (or `rediss://…`) for one server (a master, or one reached through
 * a proxy), `redis-cluster://host:port,host:port,…` for a Redis Cluster given by seed nodes.
 * Everything the sale does works on both: a sale's keys share one hash tag, so each script stays on
 * one slot, and the order pipeline reads each sale's stream on its own slot.
 */
export function connectSaleRedis(url: string, options: RedisOptions = {}): SaleRedis {
  if (!url.startsWith(CLUSTER_SCHEME)) return new Redis(url, options);
  const nodes = url
    .slice(CLUSTER_SCHEME.length)
    .split(',')
    .map((node) => {
      const [host, port] = node.trim().split(':');
      if (!host || !port || !/^\d+$/.test(port)) {
        throw new Error(`a redis-cluster URL lists host:port seed nodes, got "${node}" in ${url}`);
      }
      return { host, port: Number(port) };
    });
  return new Cluster(nodes, { redisOptions: options });
}

/** Creates the order pipeline's group on a stream (and the stream); a group that exists is fine. */
export async function createGroup(redis: SaleRedis, stream: string): Promise<void> {
  await redis.xgroup('CREATE', stream, ORDER_GROUP, '0', 'MKSTREAM').catch((error: Error) => {
    if (!error.message.startsWith('BUSYGROUP')) throw error;
  });
}
