import type { Redis } from 'ioredis';

/**
 * Every key of a Redis database with its type and full value (and whether it expires), for asserting
 * that an operation changed nothing at all. Exact TTLs are left out: they tick.
 */
export async function redisState(redis: Redis): Promise<Record<string, unknown>> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  const state: Record<string, unknown> = {};
  for (const key of keys.sort()) {
    const type = await redis.type(key);
    const expires = (await redis.pttl(key)) >= 0;
    state[key] = { type, expires, value: await valueOf(redis, key, type) };
  }
  return state;
}

async function valueOf(redis: Redis, key: string, type: string): Promise<unknown> {
  switch (type) {
    case 'string':
      return redis.getBuffer(key).then((b) => b?.toString('base64'));
    case 'hash':
      return redis.hgetall(key);
    case 'set':
      return (await redis.smembers(key)).sort();
    case 'zset':
      return redis.zrange(key, 0, -1, 'WITHSCORES');
    case 'list':
      return redis.lrange(key, 0, -1);
    case 'stream':
      return {
        entries: await redis.xrange(key, '-', '+'),
        groups: await redis.xinfo('GROUPS', key),
      };
    default:
      return type;
  }
}
