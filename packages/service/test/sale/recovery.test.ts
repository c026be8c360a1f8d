import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { Resources } from '../../src/cli/lifecycle.js';
import { startRuntime, type Runtime } from '../../src/cli/runtime.js';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { aofSize, cutAofTail } from '../helpers/aof.js';
import { until } from '../helpers/until.js';
import { Redis } from 'ioredis';
import { ORDER_GROUP, saleKeys } from '../../src/sale/keys.js';
import { OrderPipeline, type OrderPipelineOptions } from '../../src/sale/pipeline/order-pipeline.js';
import { Gate } from '../helpers/gate.js';

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

async function startStack(redisArgs: string[], pipelines = 1): Promise<Stack> {
  const redis = await RedisServer.start({ args: redisArgs });
  const resources = new Resources();
  resources.add('redis-server', () => redis.stop());
  const runtime = await startRuntime(
    {
      redisUrl: redis.url,
      databaseUrl: postgres.url,
      pipelines,
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    },
    resources,
  );
  const app = await buildApp({
    service: runtime.service,
    context: runtime.context,
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

/**
 * The order pipeline of `stack` (started with none of its own), as startRuntime builds one, with
 * test options; stopped with the stack.
 */
function startPipeline(stack: Stack, options: OrderPipelineOptions): OrderPipeline {
  const pipeline = new OrderPipeline(stack.runtime.context, stack.runtime.db, {
    logger: stack.runtime.logger,
    metrics: stack.runtime.metrics,
    ...options,
  });
  stack.resources.add('the test pipeline', () => pipeline.stop());
  pipeline.start();
  return pipeline;
}

/** Six buyers, each with an Idempotency-Key; their order ids by user. */
async function sixBuyers(stack: Stack, saleId: string): Promise<Record<string, string>> {
  const orders: Record<string, string> = {};
  for (let i = 0; i < 6; i++) {
    const response = await buy(stack, saleId, `u${i}`, `u${i}-1`);
    expect(response.statusCode).toBe(202);
    orders[`u${i}`] = (response.json() as { orderId: string }).orderId;
  }
  return orders;
}

/** Stream entries read and not acknowledged, per consumer (Redis's own count). */
async function pendingOf(stack: Stack, saleId: string): Promise<Record<string, number>> {
  const [, , , consumers] = (await stack.runtime.redis.xpending(saleKeys(saleId).stream, ORDER_GROUP)) as [
    number,
    unknown,
    unknown,
    Array<[string, string]> | null,
  ];
  return Object.fromEntries((consumers ?? []).map(([name, n]) => [name, Number(n)]));
}

/** The recovery fence as every session sees it (0: never raised). */
async function currentFence(stack: Stack): Promise<number> {
  const { rows } = await stack.runtime.db.query<{ fence: string }>(
    'SELECT (CASE WHEN is_called THEN last_value ELSE 0 END)::text AS fence FROM recovery_fence',
  );
  return Number(rows[0]?.fence);
}

/** Whether Redis holds the sale again, rebuilt (its stock back, no rebuild under way). */
async function rebuiltInRedis(stack: Stack, saleId: string): Promise<boolean> {
  const keys = saleKeys(saleId);
  const [stock, flag] = await Promise.all([
    stack.runtime.redis.exists(keys.stock),
    stack.runtime.redis.exists(keys.recovering),
  ]);
  return stock === 1 && flag === 0;
}

/** The sale's orders as the record holds them, its total, and the most units any user holds. */
async function recordOf(stack: Stack, saleId: string) {
  const db = stack.runtime.db;
  const orders = await db.query<{
    id: string;
    user_id: string;
    status: string;
    reject_reason: string | null;
  }>('SELECT id::text AS id, user_id, status, reject_reason FROM orders WHERE sale_id = $1', [saleId]);
  const sale = await db.query<{ sold: number; stock: number }>(
    'SELECT sold, stock FROM sales WHERE id = $1',
    [saleId],
  );
  const perUser = await db.query<{ most: number | null }>(
    "SELECT max(n)::int AS most FROM (SELECT count(*) AS n FROM orders WHERE sale_id = $1 AND status = 'confirmed' GROUP BY user_id) c",
    [saleId],
  );
  const holdings = await db.query<{ most: number | null }>(
    'SELECT max(quantity)::int AS most FROM purchases WHERE sale_id = $1',
    [saleId],
  );
  return {
    orders: orders.rows,
    confirmed: new Set(orders.rows.filter((o) => o.status === 'confirmed').map((o) => o.id)),
    rejected: orders.rows.filter((o) => o.status === 'rejected'),
    sold: sale.rows[0]?.sold,
    stock: sale.rows[0]?.stock,
    mostOrdersOfOneUser: perUser.rows[0]?.most ?? 0,
    mostHeldByOneUser: holdings.rows[0]?.most ?? 0,
  };
}

/** Redis's side of the sale: units left, and the most units it counts for one buyer. */
async function redisOf(stack: Stack, saleId: string) {
  const keys = saleKeys(saleId);
  const buyers = await stack.runtime.redis.hgetall(keys.buyers);
  return {
    remaining: Number(await stack.runtime.redis.get(keys.stock)),
    mostHeldByOneBuyer: Math.max(0, ...Object.values(buyers).map(Number)),
  };
}

async function lostOrders(stack: Stack): Promise<number> {
  const { values } = await stack.runtime.metrics.ordersLost.get();
  return values.find((v) => v.labels.reason === 'fenced')?.value ?? 0;
}

const orderIdOf = (result: { response: { json(): unknown } }) =>
  (result.response.json() as { orderId: string }).orderId;

describe('Redis restarted empty while the pipeline holds acknowledged orders it has not recorded', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack([], 0); // the test starts the pipeline, after the purchases
  });
  afterAll(async () => {
    await stack?.resources.closeAll();
  });

  it('the rebuild waits until the held batch is recorded: every 202 is confirmed, retries get their orders, nothing sold twice', async () => {
    const saleId = await createSale(stack, 10);
    const first = await sixBuyers(stack, saleId);
    // The six entries in one batch, held just before its transaction.
    const gate = new Gate();
    const pipeline = startPipeline(stack, { faults: { beforeCommit: gate.pass } });
    try {
      await gate.reached;
      expect(await pendingOf(stack, saleId)).toEqual({ [pipeline.consumer]: 6 });
      const fenceBefore = await currentFence(stack);

      await stack.redis.kill();
      await stack.redis.restart(); // empty: the six exist only in the pipeline's memory now

      const limitMs = 30_000;
      const newcomers = Array.from({ length: 10 }, (_, i) =>
        buyThroughRecovery(stack, saleId, `n${i}`, `n${i}-1`, limitMs),
      );
      const retries = Object.keys(first).map((user) =>
        buyThroughRecovery(stack, saleId, user, `${user}-1`, limitMs),
      );
      const anotherKey = buyThroughRecovery(stack, saleId, 'u0', 'u0-2', limitMs);
      // Released once the rebuild is under way: it raised the fence (it waits for the pipelines) — or
      // it is already done, for a rebuild that does not wait (then it read the record without the six).
      await until(
        'the rebuild under way',
        async () => (await currentFence(stack)) > fenceBefore || (await rebuiltInRedis(stack, saleId)),
      );
      gate.open();

      const bought = await Promise.all(newcomers);
      const retried = await Promise.all(retries);
      const second = await anotherKey;
      for (const result of [...bought, ...retried, second])
        expect(result.statuses.filter((s) => s !== 503 && s !== 202 && s !== 409)).toEqual([]);
      // The retries get the orders they were acknowledged the first time.
      expect(retried.map((r) => r.response.statusCode)).toEqual([202, 202, 202, 202, 202, 202]);
      expect(retried.map(orderIdOf)).toEqual(Object.values(first));
      // u0 is a buyer already: a new key is refused — over the limit, or sold out if the newcomers
      // took the last units first (the script checks the stock first) — and the rebuilt sale counts
      // all six as buyers.
      expect(second.response.statusCode).toBe(409);
      expect(['limit_reached', 'sold_out']).toContain((second.response.json() as { error: string }).error);
      const buyers = await stack.runtime.redis.hgetall(saleKeys(saleId).buyers);
      for (const user of Object.keys(first)) expect(buyers[user]).toBe('1');
      // Four units were left for ten newcomers.
      const newOrders = bought.filter((r) => r.response.statusCode === 202).map(orderIdOf);
      expect(newOrders).toHaveLength(4);
      for (const r of bought.filter((b) => b.response.statusCode !== 202))
        expect(r.response.json()).toMatchObject({ error: 'sold_out' });

      // Every 202 confirmed in the record, none rejected; within stock and the limit, in both stores.
      const acknowledged = new Set([...Object.values(first), ...newOrders]);
      await until('every acknowledged order recorded', async () => {
        const record = await recordOf(stack, saleId);
        return [...acknowledged].every((id) => record.confirmed.has(id));
      });
      const record = await recordOf(stack, saleId);
      expect(record.rejected).toEqual([]);
      expect(record.confirmed).toEqual(acknowledged);
      expect(record.sold).toBe(10);
      expect(record.mostOrdersOfOneUser).toBe(1);
      expect(record.mostHeldByOneUser).toBe(1);
      expect(await redisOf(stack, saleId)).toEqual({ remaining: 0, mostHeldByOneBuyer: 1 });
      expect(await lostOrders(stack)).toBe(0);
    } finally {
      gate.open();
    }
  });
});

describe('Redis restarted empty while the pipeline is stalled holding orders', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack([], 0);
  });
  afterAll(async () => {
    await stack?.resources.closeAll();
  });

  it('the rebuild goes ahead once the lease lapses; the stalled batch is then refused: lost and counted, never recorded as sold out', async () => {
    const saleId = await createSale(stack, 10);
    const held = await sixBuyers(stack, saleId);
    const gate = new Gate();
    const pipeline = startPipeline(stack, {
      leaseMs: 1000,
      blockMs: 100,
      faults: { beforeCommit: gate.pass },
    });
    try {
      await gate.reached;
      expect(await pendingOf(stack, saleId)).toEqual({ [pipeline.consumer]: 6 });

      await stack.redis.kill();
      await stack.redis.restart();

      // Sold again while the batch is still held: the rebuild did not wait for it (nor for 30 s).
      const fresh = await buyThroughRecovery(stack, saleId, 'n0', 'n0-1', 10_000);
      expect(fresh.response.statusCode).toBe(202);
      expect(await rebuiltInRedis(stack, saleId)).toBe(true);
      expect(gate.arrivals).toBe(1);

      gate.open();
      await until('the fenced batch dropped', async () => (await lostOrders(stack)) > 0);
      expect(await lostOrders(stack)).toBe(6);
      // The pipeline goes on: the order after the rebuild is recorded, and nothing of the held batch.
      await until('the new order recorded', async () =>
        (await recordOf(stack, saleId)).confirmed.has(orderIdOf(fresh)),
      );
      const record = await recordOf(stack, saleId);
      expect(record.orders.filter((o) => Object.values(held).includes(o.id))).toEqual([]);
      expect(record.rejected).toEqual([]);
      expect(record.confirmed).toEqual(new Set([orderIdOf(fresh)]));
      expect(record.sold).toBeLessThanOrEqual(record.stock as number);
      expect(record.sold).toBe(1);
      expect(await redisOf(stack, saleId)).toEqual({ remaining: 9, mostHeldByOneBuyer: 1 });
    } finally {
      gate.open();
    }
  });
});

describe('Redis gone while the pipeline acknowledges a batch, with the next batch read ahead', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack([], 0);
  });
  afterAll(async () => {
    await stack?.resources.closeAll();
  });

  it('the batch read ahead is recorded before the step gives up: with Redis back empty, every 202 is in the record', async () => {
    const saleId = await createSale(stack, 10);
    const first = await sixBuyers(stack, saleId);
    const consumer = 'read-ahead-test';
    let commits = 0;
    // Batches of three: the first is full, so the next three are read while it is recorded. Redis is
    // killed once the first is committed (and the next read), so its XACK fails.
    const pipeline = startPipeline(stack, {
      consumer,
      batchSize: 3,
      faults: {
        beforeCommit: async () => {
          if (commits++ > 0) return;
          await until(
            'the next batch read ahead',
            async () => (await pendingOf(stack, saleId))[consumer] === 6,
          );
        },
        afterCommit: async () => {
          if (commits === 1) await stack.redis.kill();
        },
      },
    });
    await until('the step failed (Redis down)', async () => pipeline.health.failingSince !== undefined);
    await stack.redis.restart(); // empty: the six exist only in the record, if there

    await until('all six recorded', async () => {
      const record = await recordOf(stack, saleId);
      return Object.values(first).every((id) => record.confirmed.has(id));
    });
    const retried = await Promise.all(
      Object.keys(first).map((user) => buyThroughRecovery(stack, saleId, user, `${user}-1`, 10_000)),
    );
    expect(retried.map(orderIdOf)).toEqual(Object.values(first));
    const record = await recordOf(stack, saleId);
    expect(record.rejected).toEqual([]);
    expect(record.sold).toBe(6);
    expect(await redisOf(stack, saleId)).toEqual({ remaining: 4, mostHeldByOneBuyer: 1 });
  });
});
