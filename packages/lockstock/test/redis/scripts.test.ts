import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisLockClient } from '../../src/index.js';
import { loadLuaScript } from '../../src/redis/scripts.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('script loading', () => {
  it('falls back to EVAL after SCRIPT FLUSH and re-caches the script', async () => {
    const lock = env.locks().mutex('s-flush');
    await (await lock.acquire()).release();
    await env.redis.script('FLUSH');
    const acquireSha = loadLuaScript(new URL('../../src/redis/lua/mutex-acquire.lua', import.meta.url)).sha1;
    expect(await env.redis.script('EXISTS', acquireSha)).toEqual([0]);
    const handle = await lock.acquire();
    expect(handle.fencingToken).toBe(2);
    expect(await handle.release()).toBe('released');
    expect(await env.redis.script('EXISTS', acquireSha)).toEqual([1]);
  });

  it('a local hand-off survives a lost script cache (the release is re-sent after the waiter tried)', async () => {
    const lock = env.locks().mutex('s-handoff');
    const holder = await lock.acquire({ leaseMs: 600_000 });
    const waiter = lock.acquire(); // same client: the release hands off locally
    while ((await env.redis.zcard('ls:{s-handoff}:queue')) === 0); // the waiter has tried and queued
    await env.redis.script('FLUSH');
    expect(await holder.release()).toBe('released');
    const handle = await waiter; // without the retry it would wait for the 30 s watchdog lease it saw
    expect(handle.fencingToken).toBe(holder.fencingToken + 1);
    await handle.release();
  });

  it("builds its commands as the client's own methods would: the client's keyPrefix applies", async () => {
    const client = new Redis(env.server.url, { keyPrefix: 'app:' });
    const locks = new RedisLockClient({ redis: client });
    try {
      const handle = await locks.mutex('s-prefixed').acquire();
      expect(await env.redis.get('app:ls:{s-prefixed}')).toBe(handle.owner);
      expect(await env.redis.exists('ls:{s-prefixed}')).toBe(0);
      expect(await handle.release()).toBe('released');
      expect(await env.redis.exists('app:ls:{s-prefixed}')).toBe(0);
    } finally {
      await locks.close();
      client.disconnect();
    }
  });

  it('derives the key count from the script text', () => {
    const script = loadLuaScript(new URL('../../src/redis/lua/mutex-release.lua', import.meta.url));
    expect(script.keyCount).toBe(5); // KEYS[5]: the holder's metadata (inspect())
    expect(script.source).toContain('local function next_client'); // the @include was expanded
  });
});
