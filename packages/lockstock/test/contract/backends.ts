import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { RedisLockClient, type Lock, type LockClient } from '../../src/index.js';
import { RedisServer } from '../../src/servers/index.js';
import type { BackendConfig } from './subjects.mjs';

/**
 * What the contract suite needs from a backend, and nothing of its internals: clients, the JSON that
 * tells fixture processes how to connect, and the administrative way to end every hold of a lock
 * behind its holders' backs (to prove they notice). Each backend's suite file passes its own.
 */
export interface BackendFixture {
  readonly name: string;
  config(options?: { watchdogTimeoutMs?: number }): BackendConfig;
  client(options?: { watchdogTimeoutMs?: number }): LockClient;
  breakHolds(client: LockClient, lock: Lock): Promise<void>;
  /** A Redis for the suite's own probes (not the lock backend's state). */
  readonly probeUrl: string;
}

/** A private redis-server for the calling test file. */
export function useRedisBackend(): BackendFixture {
  let server: RedisServer;
  const clients: LockClient[] = [];
  const probes: Redis[] = [];
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    probes.forEach((p) => p.disconnect());
    await server.stop();
  });
  return {
    name: 'redis',
    config: (options = {}) => ({ kind: 'redis', url: server.url, ...options }),
    client(options = {}) {
      const client = new RedisLockClient({ redis: server.url, ...options });
      clients.push(client);
      return client;
    },
    async breakHolds(client, lock) {
      await (client as RedisLockClient).forceUnlock(lock);
    },
    get probeUrl() {
      return server.url;
    },
  };
}
