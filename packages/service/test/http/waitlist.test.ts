import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { saleContext } from '../../src/sale/context/context.js';
import { createSaleMetrics } from '../../src/sale/metrics.js';
import { SaleService } from '../../src/sale/service.js';
import { postgresDatabase, type Database } from '../../src/sale/store/db.js';
import { migrate } from '../../src/sale/store/migrate.js';

/**
 * The waitlist's HTTP routes (routes/waitlist.ts) on real servers: every refusal is
 * `{ error, message }` with its status, and a dependency that fails is a 503, never a 500 — PostgreSQL
 * stopped for real (`pg_ctl stop -m immediate`), redis-server stopped for real.
 */
const SECRET = 'waitlist-http-secret-0123456789';
let redisServer: RedisServer;
let postgres: PostgresServer;
let redis: Redis;
let db: Database;
let service: SaleService;
let app: FastifyInstance;
let base: string;
let nextId = 0;

beforeAll(async () => {
  [redisServer, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  // No offline queue: with redis-server down a command fails at once instead of waiting for it.
  redis = new Redis(redisServer.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined); // redis-server is stopped on purpose below
  await new Promise((resolve) => redis.once('ready', resolve));
  db = postgresDatabase(postgres.url);
  await migrate(db);
  const context = saleContext(redis);
  service = new SaleService({
    context,
    db,
    nextOrderId: () => String(BigInt(Date.now()) * 4096n + BigInt(nextId++ % 4096)),
  });
  app = await buildApp({
    service,
    context,
    db,
    metrics: createSaleMetrics(),
    config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app?.close();
  await service?.close();
  await db?.close();
  redis?.disconnect();
  await Promise.all([redisServer?.stop(), postgres?.stop()]);
});

async function call(method: string, path: string, user: string) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${signToken(SECRET, user)}`,
      ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
    },
    ...(method === 'POST' ? { body: '{}' } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('the waitlist routes', () => {
  let saleId: string;

  it('answer refusals as { error, message } with their status', async () => {
    saleId = (await service.createSale({ name: 'waitlist routes', stock: 1 })).id;
    const line = `/api/sales/${saleId}/waitlist`;
    const notSoldOut = await call('POST', line, 'early');
    expect(notSoldOut.status).toBe(409);
    expect(notSoldOut.body).toEqual({ error: 'not_sold_out', message: expect.any(String) });
    expect((await call('POST', `/api/sales/${saleId}/orders`, 'ann')).status).toBe(202);

    expect(await call('POST', line, 'bob')).toEqual({
      status: 201,
      body: { state: 'waiting', position: 1, waiting: 1 },
    });
    expect(await call('GET', line, 'bob')).toEqual({
      status: 200,
      body: { state: 'waiting', position: 1, waiting: 1 },
    });
    expect(await call('GET', line, 'nobody')).toEqual({ status: 200, body: { state: 'none' } });
    const noOffer = await call('POST', `${line}/orders`, 'bob');
    expect(noOffer.status).toBe(409);
    expect(noOffer.body).toEqual({ error: 'no_offer', message: expect.any(String) });
    const missing = await call('POST', '/api/sales/999999999/waitlist', 'bob');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'not_found', message: expect.any(String) });
    expect(await call('DELETE', line, 'cat')).toEqual({ status: 200, body: { result: 'absent' } });
  });

  it('PostgreSQL down: joining and leaving (they are recorded first) answer 503; where one stands is still told', async () => {
    const line = `/api/sales/${saleId}/waitlist`;
    await postgres.stopImmediately();
    try {
      for (const answer of [await call('POST', line, 'dan'), await call('DELETE', line, 'bob')]) {
        expect(answer.status).toBe(503);
        expect(answer.body).toEqual({ error: 'service_unavailable', message: expect.any(String) });
      }
      expect((await call('GET', line, 'bob')).body).toMatchObject({ state: 'waiting', position: 1 });
      // Nobody was seated without a record of it.
      expect((await call('GET', line, 'dan')).body).toEqual({ state: 'none' });
    } finally {
      await postgres.restart();
    }
  });

  it('Redis down: every waitlist route answers 503', async () => {
    const line = `/api/sales/${saleId}/waitlist`;
    await redisServer.stop();
    for (const [method, path] of [
      ['POST', line],
      ['GET', line],
      ['DELETE', line],
      ['POST', `${line}/orders`],
    ] as const) {
      const answer = await call(method, path, 'bob');
      expect(answer.status, `${method} ${path}`).toBe(503);
      expect(answer.body).toEqual({ error: 'service_unavailable', message: expect.any(String) });
    }
  });
});
