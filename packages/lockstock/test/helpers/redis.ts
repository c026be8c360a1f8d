import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { RedisLockClient, type LockClientEvents, type RedisLockClientOptions } from '../../src/index.js';
import { RedisServer } from '@lockstock/servers';

/**
 * Starts one real redis-server for the calling test file, plus a raw connection for inspecting state.
 * `locks()` makes lock clients that are closed after the file.
 */
export function useRedis() {
  const state = {} as { server: RedisServer; redis: Redis };
  const clients: RedisLockClient[] = [];
  beforeAll(async () => {
    state.server = await RedisServer.start();
    state.redis = new Redis(state.server.url);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    state.redis.disconnect();
    await state.server.stop();
  });
  return {
    get server() {
      return state.server;
    },
    get redis() {
      return state.redis;
    },
    locks(options: Partial<RedisLockClientOptions> = {}): RedisLockClient {
      const client = new RedisLockClient({ redis: state.server.url, ...options });
      clients.push(client);
      return client;
    },
  };
}

/** Resolves with the next emission of `event` whose payload satisfies `filter`. */
export function nextEvent<K extends keyof LockClientEvents>(
  client: RedisLockClient,
  event: K,
  filter: (payload: LockClientEvents[K][0]) => boolean = () => true,
): Promise<LockClientEvents[K][0]> {
  return new Promise((resolve) => {
    const listener = (...args: LockClientEvents[K]) => {
      if (!filter(args[0])) return;
      client.off(event, listener as never);
      resolve(args[0]);
    };
    client.on(event, listener as never);
  });
}
