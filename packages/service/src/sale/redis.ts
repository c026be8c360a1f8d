import type { Cluster, Redis } from 'ioredis';

/**
 * The service's Redis: it depends on ioredis itself and uses its whole command set (streams, sets,
 * MULTI, `call`). lockstock's `RedisClient` is narrower on purpose — the commands the locks call,
 * matched by shape — and every `SaleRedis` satisfies it, so one connection serves both.
 */
export type SaleRedis = Redis | Cluster;
