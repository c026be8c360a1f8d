import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '@lockstock/servers';
import { saleContext } from '../../src/sale/context/context.js';
import { SnowflakeIdGenerator } from '../../src/sale/ids/snowflake.js';

/*
 * The order-id worker's lease across a Redis that came back without it (flushed, or restarted without
 * persistence): the renewal that finds it gone takes the same worker id back when nobody took it —
 * as recovery's confirm() does — so the outage is not reported a second time; one another instance
 * holds is lost, and said.
 */
let server: RedisServer;
const connections: Redis[] = [];
const generators: SnowflakeIdGenerator[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  await Promise.all(generators.map((ids) => ids.stop()));
  for (const redis of connections) redis.disconnect();
  await server?.stop();
});

function generator(lost: Error[]) {
  const redis = new Redis(server.url);
  connections.push(redis);
  const context = saleContext(redis);
  const ids = new SnowflakeIdGenerator(context, { leaseMs: 300, onLeaseLost: (error) => lost.push(error) });
  generators.push(ids);
  return { ids, redis, key: (id: number) => `${context.prefix}:idworker:${id}` };
}

describe('the order-id lease', () => {
  it('gone from Redis: the next renewal takes the same worker id back, nothing reported', async () => {
    const lost: Error[] = [];
    const { ids, redis, key } = generator(lost);
    const workerId = await ids.start();
    const owner = await redis.get(key(workerId));
    await redis.flushall();
    // Renewals run every 100 ms: the key comes back, the generator's own, with the same worker id.
    await expect.poll(() => redis.get(key(workerId)), { timeout: 10_000 }).toBe(owner);
    expect(lost).toEqual([]);
  });

  it('found gone by two paths at once (recovery and a renewal): taken back once, nothing reported', async () => {
    const lost: Error[] = [];
    const { ids, redis, key } = generator(lost);
    const workerId = await ids.start();
    const owner = await redis.get(key(workerId));
    await redis.flushall();
    // Both read the lease gone before either sets it: the second's SET NX finds the first's.
    await Promise.all([ids.confirm(), ids.confirm()]);
    expect(await redis.get(key(workerId))).toBe(owner);
    expect(lost).toEqual([]);
  });

  it('taken by another instance meanwhile: lost, and said', async () => {
    const lost: Error[] = [];
    const { ids, redis, key } = generator(lost);
    const workerId = await ids.start();
    await redis.set(key(workerId), 'another instance', 'PX', 60_000);
    await expect.poll(() => lost.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(lost[0]?.message).toMatch(new RegExp(`lost the lease on worker id ${workerId}`));
  });
});
