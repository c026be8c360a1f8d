import { describe, expect, it } from 'vitest';
import { loadLuaScript } from '../../src/redis/scripts.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('script loading', () => {
  it('falls back to EVAL after SCRIPT FLUSH and re-caches the script', async () => {
    const lock = env.locks().mutex('s-flush');
    await (await lock.acquire()).release();
    await env.redis.script('FLUSH');
    const acquireSha = loadLuaScript(
      new URL('../../src/locks/redis/mutex-acquire.lua', import.meta.url),
    ).sha1;
    expect(await env.redis.script('EXISTS', acquireSha)).toEqual([0]);
    const handle = await lock.acquire();
    expect(handle.fencingToken).toBe(2);
    expect(await handle.release()).toBe('released');
    expect(await env.redis.script('EXISTS', acquireSha)).toEqual([1]);
  });

  it('derives the key count from the script text', () => {
    const script = loadLuaScript(new URL('../../src/locks/redis/mutex-release.lua', import.meta.url));
    expect(script.keyCount).toBe(2);
  });
});
