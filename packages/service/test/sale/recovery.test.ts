import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { Resources } from '../../src/cli/lifecycle.js';
import { startRuntime, type Runtime } from '../../src/cli/runtime.js';
import { PostgresServer, RedisServer } from 'lockstock/servers';
import { aofSize, cutAofTail } from '../helpers/aof.js';
import { until } from '../helpers/until.js';
import { Redis } from 'ioredis';
import { saleKeys } from '../../src/sale/keys.js';

/**
 * Issue 13's open defects, in a process assembled as `serve` assembles it (startRuntime, a pipeline
 * in-process) on a real redis-server that loses data for real: restarted without persistence, and
 * restarted on an AOF whose tail was cut (what an OS crash does to `appendfsync everysec`).
 */
const SECRET = 'recovery-secret-0123456789';
let postgres: PostgresServer;

beforeAll(async () => {
  postgres = await PostgresServer.start();
});
afterAll(async () => {
  await postgres?.stop();
});

interface Stack {
  redis: RedisServer;
  runtime: Runtime;
  app: FastifyInstance;
  resources: Resources;
}

async function startStack(redisArgs: string[]): Promise<Stack> {
  const redis = await RedisServer.start({ args: redisArgs });
  const resources = new Resources();
  resources.add('redis-server', () => redis.stop());
  const runtime = await startRuntime(
    {
      redisUrl: redis.url,
      databaseUrl: postgres.url,
      pipelines: 1,
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    },
    resources,
  );
  const app = await buildApp({
    service: runtime.service,
    redis: runtime.redis,
    db: runtime.db,
    metrics: runtime.metrics,
    config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  resources.add('the app', () => app.close());
  return { redis, runtime, app, resources };
}

async function createSale(stack: Stack, stock: number): Promise<string> {
  const sale = await stack.runtime.service.createSale({ name: 'recovery', stock });
  return sale.id;
}

function buy(stack: Stack, saleId: string, user: string, key: string) {
  return stack.app.inject({
    method: 'POST',
    url: `/api/sales/${saleId}/orders`,
    headers: { authorization: `Bearer ${signToken(SECRET, user)}`, 'idempotency-key': key },
    payload: {},
  });
}

async function remaining(stack: Stack, saleId: string): Promise<number> {
  const response = await stack.app.inject({ method: 'GET', url: `/api/sales/${saleId}` });
  return (response.json() as { remaining: number }).remaining;
}

/** Units the record holds for a sale, and how many of its orders it rejected. */
async function recorded(stack: Stack, saleId: string) {
  const { rows } = await stack.runtime.db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM orders WHERE sale_id = $1 GROUP BY status',
    [saleId],
  );
  const count = (status: string) => rows.find((r) => r.status === status)?.n ?? 0;
  return { confirmed: count('confirmed'), rejected: count('rejected') };
}

async function drained(stack: Stack, saleId: string, orders: number): Promise<void> {
  await until(`${orders} orders recorded`, async () => (await recorded(stack, saleId)).confirmed >= orders);
}

/**
 * Buys with one Idempotency-Key until an answer that is not a 503 (the sale being restored), at most
 * `limitMs`; every answer on the way is kept.
 */
async function buyThroughRecovery(stack: Stack, saleId: string, user: string, key: string, limitMs = 5000) {
  const statuses: number[] = [];
  const began = performance.now();
  for (;;) {
    const response = await buy(stack, saleId, user, key);
    statuses.push(response.statusCode);
    if (response.statusCode !== 503 || performance.now() - began > limitMs) {
      return { response, statuses, ms: performance.now() - began };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('Redis restarted without persistence', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack([]); // the test server's default: no AOF, no RDB
  });
  afterAll(async () => {
    await stack?.resources.closeAll();
  });

  it('the running process notices, restores the sale from the record with its buyers and keys, and sells again within 5 s', async () => {
    const saleId = await createSale(stack, 10);
    const first: Record<string, string> = {};
    for (const user of ['a', 'b', 'c']) {
      const response = await buy(stack, saleId, user, `${user}-1`);
      expect(response.statusCode).toBe(202);
      first[user] = (response.json() as { orderId: string }).orderId;
    }
    await drained(stack, saleId, 3);

    await stack.redis.kill();
    await stack.redis.restart(); // empty: nothing was persisted

    // A new buyer: never "There is no such sale" (404) for a sale the record has; 503 while it is
    // being restored, then a 202 within 5 s.
    const fresh = await buyThroughRecovery(stack, saleId, 'd', 'd-1');
    expect(fresh.statuses.filter((s) => s !== 503 && s !== 202)).toEqual([]);
    expect(fresh.response.statusCode).toBe(202);
    expect(fresh.ms).toBeLessThan(5000);

    // The buyers the record holds are buyers again: their limit is reached...
    expect((await buy(stack, saleId, 'a', 'a-2')).statusCode).toBe(409);
    // ...and a retry with a key the record has gets its original order, not a second one.
    const retry = await buy(stack, saleId, 'b', 'b-1');
    expect(retry.statusCode).toBe(202);
    expect((retry.json() as { orderId: string }).orderId).toBe(first.b);
    expect(await remaining(stack, saleId)).toBe(6);

    await drained(stack, saleId, 4);
    expect(await recorded(stack, saleId)).toEqual({ confirmed: 4, rejected: 0 });
  });
});

describe('a rebuild left unfinished', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack([]);
  });
  afterAll(async () => {
    await stack?.resources.closeAll();
  });

  it('a recovering flag whose rebuilder died (its lock is free) is taken over: the sale sells again within 5 s, buyers kept', async () => {
    const saleId = await createSale(stack, 5);
    expect((await buy(stack, saleId, 'a', 'a-1')).statusCode).toBe(202);
    await drained(stack, saleId, 1);
    // What a rebuilder that was SIGKILLed between begin.lua and finish.lua leaves behind.
    const client = new Redis(stack.redis.url);
    try {
      await client.set(saleKeys(saleId).recovering, 'dead-rebuilder:1');
    } finally {
      client.disconnect();
    }
    const fresh = await buyThroughRecovery(stack, saleId, 'b', 'b-1');
    expect(fresh.statuses.filter((s) => s !== 503 && s !== 202)).toEqual([]);
    expect(fresh.response.statusCode).toBe(202);
    expect((await buy(stack, saleId, 'a', 'a-2')).statusCode).toBe(409); // a's unit is still a's
    expect(await remaining(stack, saleId)).toBe(3);
  });
});

describe('Redis restarted on an AOF whose tail was cut (an OS crash under appendfsync everysec)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(['--appendonly', 'yes', '--appendfsync', 'everysec']);
  });
  afterAll(async () => {
    await stack?.resources.closeAll();
  });

  it('notices that Redis is older than the record and rebuilds it before selling again: no unit sold twice, no buyer admitted twice', async () => {
    const saleId = await createSale(stack, 10);
    for (const user of ['a', 'b']) expect((await buy(stack, saleId, user, `${user}-1`)).statusCode).toBe(202);
    await drained(stack, saleId, 2);
    const kept = aofSize(stack.redis.dir);
    // These two are acknowledged and recorded, then Redis forgets them: the part of the AOF an OS
    // crash loses.
    const lost: Record<string, string> = {};
    for (const user of ['c', 'd']) {
      const response = await buy(stack, saleId, user, `${user}-1`);
      expect(response.statusCode).toBe(202);
      lost[user] = (response.json() as { orderId: string }).orderId;
    }
    await drained(stack, saleId, 4);

    await stack.redis.kill();
    expect(cutAofTail(stack.redis.dir, kept)).toBeGreaterThan(0);
    await stack.redis.restart();

    // c bought before the crash: Redis forgot it, the record did not. Buying again is refused...
    const again = await buyThroughRecovery(stack, saleId, 'c', 'c-2');
    expect(again.statuses.filter((s) => s !== 503 && s !== 409)).toEqual([]);
    expect(again.response.json()).toMatchObject({ error: 'limit_reached' });
    // ...and retrying the first purchase's key answers its original order.
    const retry = await buy(stack, saleId, 'd', 'd-1');
    expect(retry.statusCode).toBe(202);
    expect((retry.json() as { orderId: string }).orderId).toBe(lost.d);
    expect(await remaining(stack, saleId)).toBe(6);

    // Six more buyers get the six units left, and nothing Redis admits is refused by the record.
    for (let i = 0; i < 6; i++) expect((await buy(stack, saleId, `n${i}`, `n${i}-1`)).statusCode).toBe(202);
    expect((await buy(stack, saleId, 'late', 'late-1')).json()).toMatchObject({ error: 'sold_out' });
    await drained(stack, saleId, 10);
    expect(await recorded(stack, saleId)).toEqual({ confirmed: 10, rejected: 0 });
  });
});
