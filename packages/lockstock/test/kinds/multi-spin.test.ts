import { describe, expect, it } from 'vitest';
import { InvalidLockOptionError, RedisLockClient } from '../../src/index.js';
import { countedRedis } from '../helpers/counted-redis.mjs';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('multi-lock', () => {
  it('takes all or none: a busy part undoes the parts already taken', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const busy = await b.mutex('ml-b').acquire();
    const multi = a.multiLock([a.mutex('ml-a'), a.mutex('ml-b'), a.reentrant('ml-c')]);
    expect(await multi.tryAcquire({ waitMs: 50 })).toBeUndefined();
    expect(await a.mutex('ml-a').isLocked()).toBe(false); // taken first, then given back
    expect(await a.reentrant('ml-c').isLocked()).toBe(false);
    await busy.release();
    const handle = await multi.acquire({ waitMs: 1_000 });
    expect(await Promise.all(['ml-a', 'ml-b'].map((n) => a.mutex(n).isLocked()))).toEqual([true, true]);
    expect(await handle.release()).toBe('released');
    expect(await multi.isLocked()).toBe(false);
  });

  it('two multi-locks over the same locks in opposite order do not deadlock', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const forward = a.multiLock([a.mutex('ml-x'), a.mutex('ml-y')]);
    const backward = b.multiLock([b.mutex('ml-y'), b.mutex('ml-x')]);
    let sections = 0;
    const loop = async (lock: typeof forward) => {
      for (let i = 0; i < 20; i++) {
        await lock.run(() => void sections++, { waitMs: 5_000 });
      }
    };
    await Promise.all([loop(forward), loop(backward), loop(forward), loop(backward)]);
    expect(sections).toBe(80);
  });

  it('rejects an empty list or the same lock twice', () => {
    const locks = env.locks();
    const lock = locks.mutex('ml-same');
    expect(() => locks.multiLock([])).toThrow(InvalidLockOptionError);
    expect(() => locks.multiLock([lock, lock])).toThrow(InvalidLockOptionError);
  });
});

describe('spin lock', () => {
  it('waits without subscribing to anything', async () => {
    const connection = countedRedis(env.server.url);
    const [a, b] = [env.locks(), new RedisLockClient({ redis: connection.redis })];
    const held = await a.spin('spin-quiet').acquire();
    const waiting = b.spin('spin-quiet').acquire({ waitMs: 5_000 });
    // Observed: the waiter has been refused several times (backing off in between), so it waits.
    while (connection.sent < 4) await connection.settledAfter(connection.sent + 1);
    const channels = (await env.redis.call('PUBSUB', 'SHARDCHANNELS')) as string[];
    expect(channels.filter((c) => c.includes('spin-quiet'))).toEqual([]);
    await held.release();
    const handle = await waiting;
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    await handle.release();
    await b.close();
    connection.redis.disconnect();
  });
});
