export type RedisClientKind = 'ioredis' | 'node-redis' | 'iovalkey';
export declare const REDIS_CLIENT_KINDS: readonly RedisClientKind[];
export type RedisTarget =
  | { url: string }
  | { nodes: ReadonlyArray<{ host: string; port: number }> }
  | { sentinels: ReadonlyArray<{ host: string; port: number }>; name: string };
export declare function openRedis(
  kind: RedisClientKind,
  target: RedisTarget,
): { client: object; close: () => unknown };
