import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidLockOptionError, RedisLockClient } from '../../src/index.js';
import { duplicateClient, isCluster, resolveRedis, type RedisClient } from '../../src/redis/index.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();
const require = createRequire(import.meta.url);

/**
 * A second copy of ioredis, as an application gets from a package manager that did not dedupe it:
 * the same code in another directory, so its classes are not lockstock's (`instanceof` fails). It
 * sits under the workspace's node_modules so that ioredis' own dependencies resolve.
 */
function loadForeignIoredis(): { Redis: typeof Redis; Cluster: typeof Cluster; cleanup: () => void } {
  const original = dirname(require.resolve('ioredis/package.json'));
  const cache = join(original, '..', '.cache');
  mkdirSync(cache, { recursive: true });
  const root = mkdtempSync(join(cache, 'lockstock-ioredis-copy-'));
  const copy = join(root, 'node_modules', 'ioredis');
  cpSync(original, copy, { recursive: true });
  const loaded = require(copy) as { Redis: typeof Redis; Cluster: typeof Cluster };
  return { ...loaded, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

const opened: Array<{ disconnect(): void }> = [];
afterAll(() => opened.forEach((client) => client.disconnect()));
function track<C extends { disconnect(): void }>(client: C): C {
  opened.push(client);
  return client;
}

describe('resolveRedis: clients by shape', () => {
  it("uses the caller's ioredis client as it is, and does not own it", () => {
    const client = track(new Redis(env.server.url, { lazyConnect: true }));
    expect(resolveRedis(client)).toEqual({ client, owned: false });
  });

  it('uses a client from another copy of ioredis instead of silently opening a new connection', async () => {
    const foreign = loadForeignIoredis();
    try {
      const client = track(new foreign.Redis(env.server.url));
      expect(client instanceof Redis).toBe(false); // what the old check relied on
      expect(resolveRedis(client)).toEqual({ client, owned: false });

      const locks = new RedisLockClient({ redis: client });
      try {
        expect(locks.redis).toBe(client);
        const name = `foreign-${Math.random().toString(36).slice(2)}`;
        const handle = await locks.mutex(name).acquire();
        expect(await env.redis.exists(`ls:{${name}}`)).toBe(1); // on the test server, through that client
        expect(await handle.release()).toBe('released');
      } finally {
        await locks.close();
      }
      expect(client.status).toBe('ready'); // the caller's client stays open
    } finally {
      foreign.cleanup();
    }
  });

  it('tells a cluster from a standalone client by shape, and duplicates each as its kind', () => {
    const foreign = loadForeignIoredis();
    try {
      for (const [Standalone, ClusterClass] of [
        [Redis, Cluster],
        [foreign.Redis, foreign.Cluster],
      ] as const) {
        const standalone = track(new Standalone(env.server.url, { lazyConnect: true }));
        const cluster = track(new ClusterClass([env.server.url], { lazyConnect: true }));
        expect(isCluster(standalone)).toBe(false);
        expect(isCluster(cluster)).toBe(true);
        expect(resolveRedis(cluster)).toEqual({ client: cluster, owned: false });

        const copy = track(duplicateClient(cluster));
        expect(copy).toBeInstanceOf(ClusterClass);
        expect(copy).not.toBe(cluster);
        // Lock wake-ups use sharded pub/sub, which a cluster client routes only with this option.
        expect(copy.options.shardedSubscribers).toBe(true);
        expect(track(duplicateClient(standalone))).toBeInstanceOf(Standalone);
      }
    } finally {
      foreign.cleanup();
    }
  });

  it('opens (and owns) a connection for a URL or plain ioredis options', () => {
    const fromUrl = resolveRedis(`${env.server.url}?lazyConnect=true`);
    const fromOptions = resolveRedis({ port: env.server.port, lazyConnect: true });
    for (const { client, owned } of [fromUrl, fromOptions]) {
      track(client);
      expect(owned).toBe(true);
      expect(client).toBeInstanceOf(Redis);
    }
    expect((fromOptions.client as Redis).options).toMatchObject({
      port: env.server.port,
      maxRetriesPerRequest: 2,
    });
  });

  it('refuses what is neither a client nor options with InvalidLockOptionError', () => {
    const halfClient = { get: async () => null, set: async () => 'OK', status: 'ready' };
    for (const [value, message] of [
      [null, /must be an ioredis Redis or Cluster client/],
      [42, /got 42/],
      ['', /got ""/],
      [new Map(), /must be an ioredis Redis or Cluster client/],
      [halfClient, /this client has no evalsha, eval, hget/],
    ] as const) {
      const attempt = () => resolveRedis(value as unknown as RedisClient);
      expect(attempt).toThrow(InvalidLockOptionError);
      expect(attempt).toThrow(message);
      expect(() => new RedisLockClient({ redis: value as unknown as RedisClient })).toThrow(
        InvalidLockOptionError,
      );
    }
  });
});

describe("a caller's auto-pipelining client", () => {
  it('sends lock scripts straight to the socket, not through its lockstep batches', async () => {
    // ioredis sends an auto-pipelined batch only once the previous one's replies are all in: lock
    // scripts queued there ran in lockstep (half the uncontended pairs/s of a default client).
    const redis = track(new Redis(env.server.url, { enableAutoPipelining: true }));
    await redis.ping();
    const locks = new RedisLockClient({ redis });
    try {
      const lock = locks.mutex('autopipelined');
      await (await lock.acquire()).release(); // scripts cached, connection ready
      const pending = Array.from({ length: 8 }, () => lock.tryAcquire());
      expect(redis.autoPipelineQueueSize).toBe(0); // none of the eight tries waits in ioredis' batch
      const handles = await Promise.all(pending);
      expect(handles.filter((h) => h !== undefined)).toHaveLength(1);
      await Promise.all(handles.map((h) => h?.release()));
      expect(await lock.isLocked()).toBe(false);
    } finally {
      await locks.close();
    }
  });
});
