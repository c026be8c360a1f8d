import type { FastifyInstance, InjectOptions } from 'fastify';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import type { HttpConfig } from '../../src/http/config.js';
import { saleKeys } from '../../src/sale/keys.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();
const SECRET = 'test-secret-0123456789abcdef';
const config: HttpConfig = { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 };
let app: FastifyInstance;
let saleId: string;

const bearer = (user: string, admin = false) => ({
  authorization: `Bearer ${signToken(SECRET, user, { admin })}`,
});

beforeAll(async () => {
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config,
  });
  const created = await app.inject({
    method: 'POST',
    url: '/api/sales',
    headers: bearer('admin', true),
    payload: { name: 'api sale', stock: 50, perUserLimit: 2 },
  });
  expect(created.statusCode).toBe(201);
  saleId = created.json().id;
});
afterAll(async () => {
  await app.close();
});

/** What a request could have changed: stock, stream, recorded orders, the script cache. */
async function snapshot() {
  const keys = saleKeys(saleId);
  const info = await env.redis.info('memory');
  const { rows } = await env.db.query<{ n: number }>('SELECT count(*)::int AS n FROM orders');
  return {
    remaining: await env.redis.get(keys.stock),
    stream: await env.redis.xlen(keys.stream),
    buyers: await env.redis.hlen(keys.buyers),
    orders: rows[0]?.n,
    scripts: /number_of_cached_scripts:(\d+)/.exec(info)?.[1],
    dbsize: await env.redis.dbsize(),
  };
}

describe('HTTP API', () => {
  it('buys, answers the same order for a repeated Idempotency-Key, and shows the order to its buyer', async () => {
    const url = `/api/sales/${saleId}/orders`;
    const headers = { ...bearer('carol'), 'idempotency-key': 'checkout-1' };
    const first = await app.inject({ method: 'POST', url, headers, payload: { quantity: 1 } });
    expect(first.statusCode).toBe(202);
    expect(first.json()).toEqual({ orderId: expect.stringMatching(/^\d+$/), status: 'reserved' });
    const again = await app.inject({ method: 'POST', url, headers, payload: { quantity: 1 } });
    expect(again.statusCode).toBe(202);
    expect(again.json().orderId).toBe(first.json().orderId);
    const dave = await app.inject({
      method: 'POST',
      url,
      headers: { ...bearer('dave'), 'idempotency-key': 'checkout-1' },
    });
    expect(dave.statusCode).toBe(202);
    expect(dave.json().orderId).not.toBe(first.json().orderId);
    const reused = await app.inject({ method: 'POST', url, headers, payload: { quantity: 2 } });
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error).toBe('idempotency_key_reused');

    const mine = await app.inject({
      method: 'GET',
      url: `/api/orders/${first.json().orderId}`,
      headers: bearer('carol'),
    });
    expect(mine.statusCode).toBe(200);
    expect(mine.json()).toMatchObject({
      orderId: first.json().orderId,
      saleId,
      userId: 'carol',
      quantity: 1,
    });
    const theirs = await app.inject({
      method: 'GET',
      url: `/api/orders/${first.json().orderId}`,
      headers: bearer('dave'),
    });
    expect(theirs.statusCode).toBe(404);
    const asAdmin = await app.inject({
      method: 'GET',
      url: `/api/orders/${first.json().orderId}`,
      headers: bearer('root', true),
    });
    expect(asAdmin.statusCode).toBe(200);

    const plain = await app.inject({ method: 'POST', url, headers: bearer('erin') }); // no body: one unit
    expect(plain.statusCode).toBe(202);

    const sale = await app.inject({ method: 'GET', url: `/api/sales/${saleId}` });
    expect(sale.json()).toMatchObject({ id: saleId, stock: 50, remaining: 47, sold: 3, status: 'active' });
  });

  it('bad input gets a 4xx with { error, message } and changes nothing', async () => {
    const url = `/api/sales/${saleId}/orders`;
    const expired = createSigner({
      key: SECRET,
      algorithm: 'HS256',
      clockTimestamp: Date.now() - 7_200_000,
      expiresIn: 3_600_000,
    })({
      sub: 'eve',
    });
    const forged = createSigner({ key: 'another-secret-0123456789', algorithm: 'HS256' })({ sub: 'eve' });
    const unsigned = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"eve"}').toString('base64url')}.`;
    const json = { 'content-type': 'application/json' };
    const cases: Array<[string, InjectOptions, number, string]> = [
      ['no token', { method: 'POST', url, payload: {} }, 401, 'unauthorized'],
      [
        'forged token',
        { method: 'POST', url, headers: { authorization: `Bearer ${forged}` }, payload: {} },
        401,
        'unauthorized',
      ],
      [
        'expired token',
        { method: 'POST', url, headers: { authorization: `Bearer ${expired}` }, payload: {} },
        401,
        'unauthorized',
      ],
      [
        'alg none',
        { method: 'POST', url, headers: { authorization: `Bearer ${unsigned}` }, payload: {} },
        401,
        'unauthorized',
      ],
      [
        'user id in the body',
        { method: 'POST', url, headers: bearer('eve'), payload: { userId: 'carol' } },
        400,
        'bad_request',
      ],
      [
        'unknown field',
        { method: 'POST', url, headers: bearer('eve'), payload: { quantity: 1, price: 0 } },
        400,
        'bad_request',
      ],
      [
        'non-numeric sale id',
        { method: 'POST', url: '/api/sales/abc/orders', headers: bearer('eve'), payload: {} },
        400,
        'bad_request',
      ],
      [
        'negative quantity',
        { method: 'POST', url, headers: bearer('eve'), payload: { quantity: -1 } },
        400,
        'bad_request',
      ],
      [
        'zero quantity',
        { method: 'POST', url, headers: bearer('eve'), payload: { quantity: 0 } },
        400,
        'bad_request',
      ],
      [
        'huge quantity',
        { method: 'POST', url, headers: bearer('eve'), payload: { quantity: 1e12 } },
        400,
        'bad_request',
      ],
      [
        'fractional quantity',
        { method: 'POST', url, headers: bearer('eve'), payload: { quantity: 1.5 } },
        400,
        'bad_request',
      ],
      [
        'string quantity',
        { method: 'POST', url, headers: bearer('eve'), payload: { quantity: '1' } },
        400,
        'bad_request',
      ],
      [
        'invalid JSON',
        { method: 'POST', url, headers: { ...bearer('eve'), ...json }, payload: '{"quantity":' },
        400,
        'bad_request',
      ],
      [
        'oversized body',
        {
          method: 'POST',
          url,
          headers: { ...bearer('eve'), ...json },
          payload: JSON.stringify({ quantity: 1, pad: 'x'.repeat(4000) }),
        },
        413,
        'payload_too_large',
      ],
      [
        'wrong content type',
        {
          method: 'POST',
          url,
          headers: { ...bearer('eve'), 'content-type': 'text/plain' },
          payload: 'quantity=1',
        },
        415,
        'unsupported_media_type',
      ],
      [
        'prototype poisoning',
        {
          method: 'POST',
          url,
          headers: { ...bearer('eve'), ...json },
          payload: '{"__proto__":{"admin":true}}',
        },
        400,
        'bad_request',
      ],
      [
        'bad idempotency key',
        { method: 'POST', url, headers: { ...bearer('eve'), 'idempotency-key': 'a b*c' }, payload: {} },
        400,
        'bad_request',
      ],
      [
        'buyer creating a sale',
        { method: 'POST', url: '/api/sales', headers: bearer('eve'), payload: { name: 'x', stock: 1 } },
        403,
        'forbidden',
      ],
      [
        'sale with an end before its start',
        {
          method: 'POST',
          url: '/api/sales',
          headers: bearer('root', true),
          payload: { name: 'x', stock: 1, startsAt: '2030-01-02T00:00:00Z', endsAt: '2030-01-01T00:00:00Z' },
        },
        400,
        'bad_request',
      ],
      [
        'unknown sale',
        { method: 'POST', url: '/api/sales/987654321/orders', headers: bearer('eve'), payload: {} },
        404,
        'not_found',
      ],
      ['unknown route', { method: 'GET', url: '/api/nothing' }, 404, 'not_found'],
    ];
    const before = await snapshot();
    for (const [name, request, status, code] of cases) {
      const response = await app.inject(request);
      expect([name, response.statusCode]).toEqual([name, status]);
      const body = response.json();
      expect([name, body.error]).toEqual([name, code]);
      expect(typeof body.message).toBe('string');
    }
    expect(await snapshot()).toEqual(before);
  });

  it('serves health, metrics and the OpenAPI document', async () => {
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    // No pipeline runs in this file: the reservations wait, so the backlog may be 'behind' by now.
    expect(health.json()).toMatchObject({ redis: 'ok', database: 'ok', backlog: { consumers: 0 } });
    expect(['ok', 'behind']).toContain(health.json().pipeline);
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.headers['content-type']).toContain('text/plain');
    expect(metrics.body).toContain('lockstock_reservations_total{outcome="reserved"}');
    expect(metrics.body).toMatch(
      /^lockstock_http_request_seconds_count\{method="POST",route="\/api\/sales\/:id\/orders",status="202"\} [1-9]/m,
    );
    expect(metrics.body).toContain('# TYPE lockstock_http_request_seconds histogram');
    const docs = await app.inject({ method: 'GET', url: '/docs/json' });
    expect(Object.keys(docs.json().paths)).toEqual(
      expect.arrayContaining([
        '/api/sales',
        '/api/sales/{id}',
        '/api/sales/{id}/orders',
        '/api/orders/{id}',
        '/api/orders/{id}/pay',
        '/api/orders/{id}/cancel',
      ]),
    );
  });
});

describe('the sold-out fast path over HTTP', () => {
  it('answers a sale it knows to be sold out before reading the body or checking the token', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/sales',
      headers: bearer('admin', true),
      payload: { name: 'gone in a moment', stock: 1 },
    });
    const url = `/api/sales/${created.json().id}/orders`;
    expect((await app.inject({ method: 'POST', url, headers: bearer('lucky') })).statusCode).toBe(202);
    // Before the process knows, a request without a token is refused as such.
    expect((await app.inject({ method: 'POST', url })).statusCode).toBe(401);
    let n = 0;
    await until('sold-out answers from memory', async () => {
      await app.inject({ method: 'POST', url, headers: bearer(`late${n++}`) }); // sold out by Redis
      const anonymous = await app.inject({ method: 'POST', url, payload: 'not even JSON' });
      return anonymous.statusCode === 409;
    });
    const answer = await app.inject({ method: 'POST', url });
    expect([answer.statusCode, answer.json()]).toEqual([
      409,
      { error: 'sold_out', message: expect.any(String) },
    ]);
    // A retry with an Idempotency-Key takes the whole path (it may get its original order back).
    const retry = await app.inject({ method: 'POST', url, headers: { 'idempotency-key': 'k1' } });
    expect(retry.statusCode).toBe(401);
  });
});

describe('the order lifecycle over HTTP', () => {
  const post = (url: string, user: string, payload?: object) =>
    app.inject({ method: 'POST', url, headers: bearer(user), ...(payload ? { payload } : {}) });

  async function confirmedOrder(payWithinSeconds: number, user: string) {
    const created = await app.inject({
      method: 'POST',
      url: '/api/sales',
      headers: bearer('admin', true),
      payload: { name: `pay within ${payWithinSeconds}`, stock: 5, payWithinSeconds },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().payWithinSeconds).toBe(payWithinSeconds);
    const bought = await post(`/api/sales/${created.json().id}/orders`, user);
    expect(bought.statusCode).toBe(202);
    const orderId = bought.json().orderId as string;
    const pending = await post(`/api/orders/${orderId}/pay`, user);
    expect([pending.statusCode, pending.json().error]).toEqual([409, 'order_pending']);
    await env.pipeline().drain();
    return orderId;
  }

  it('pays (idempotent), refuses to cancel a paid order, and hides orders from other users', async () => {
    const orderId = await confirmedOrder(600, 'paula');
    const view = await app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: bearer('paula') });
    expect(view.json()).toMatchObject({ status: 'confirmed', payBy: expect.any(String) });
    expect(Date.parse(view.json().payBy)).toBeGreaterThan(Date.now() + 500_000);

    expect((await post(`/api/orders/${orderId}/pay`, 'mallory')).statusCode).toBe(404);
    expect((await app.inject({ method: 'POST', url: `/api/orders/${orderId}/pay` })).statusCode).toBe(401);
    expect((await post('/api/orders/not-digits/pay', 'paula')).statusCode).toBe(400);
    const paid = await post(`/api/orders/${orderId}/pay`, 'paula');
    expect([paid.statusCode, paid.json()]).toEqual([
      200,
      expect.objectContaining({ orderId, userId: 'paula', status: 'paid' }),
    ]);
    expect((await post(`/api/orders/${orderId}/pay`, 'paula')).json().status).toBe('paid');
    const cancel = await post(`/api/orders/${orderId}/cancel`, 'paula');
    expect([cancel.statusCode, cancel.json().error]).toEqual([409, 'order_paid']);
  });

  it('cancels (idempotent) and refuses to pay a cancelled order', async () => {
    const orderId = await confirmedOrder(600, 'carl');
    const cancelled = await post(`/api/orders/${orderId}/cancel`, 'carl');
    expect([cancelled.statusCode, cancelled.json().status]).toEqual([200, 'cancelled']);
    expect((await post(`/api/orders/${orderId}/cancel`, 'carl')).json().status).toBe('cancelled');
    const pay = await post(`/api/orders/${orderId}/pay`, 'carl');
    expect([pay.statusCode, pay.json().error]).toEqual([409, 'order_cancelled']);
    const view = await app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: bearer('carl') });
    expect(view.json().status).toBe('cancelled');
  });

  it('refuses to pay an order past its deadline, which has expired', async () => {
    const orderId = await confirmedOrder(1, 'tardy');
    const view = await app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: bearer('tardy') });
    const payBy = Date.parse(view.json().payBy);
    await until('the deadline to pass', async () => Date.now() > payBy + 5);
    const pay = await post(`/api/orders/${orderId}/pay`, 'tardy');
    expect([pay.statusCode, pay.json().error]).toEqual([409, 'order_expired']);
    // Cancelling it is what the buyer wanted anyway: its units are back.
    const cancel = await post(`/api/orders/${orderId}/cancel`, 'tardy');
    expect([cancel.statusCode, cancel.json().status]).toEqual([200, 'expired']);
  });

  it('refuses a payment window out of range', async () => {
    for (const payWithinSeconds of [0, 1.5, 10_000_000]) {
      const created = await app.inject({
        method: 'POST',
        url: '/api/sales',
        headers: bearer('admin', true),
        payload: { name: 'bad window', stock: 1, payWithinSeconds },
      });
      expect([payWithinSeconds, created.statusCode]).toEqual([payWithinSeconds, 400]);
    }
  });
});

/**
 * How many requests the rate limiter has counted for `key` (`user:<id>` or `ip:<address>`) in its
 * current window: its counter in Redis, which starts at the first request and is gone when the window
 * ends (the limiter's 1 s is wall clock, which a few serial requests can outlast on a loaded machine).
 */
async function limiterCount(key: string): Promise<number> {
  const [found] = await env.redis.keys(`ls:*rl:${key}*`);
  return found === undefined ? 0 : Number(await env.redis.get(found));
}

/** Runs `attempt` with fresh names until all of one attempt's requests fell in one wall-clock second. */
async function inOneSecond<T>(attempt: (name: string) => Promise<T>): Promise<T> {
  for (let i = 0; i < 5; i++) {
    const second = Math.floor(Date.now() / 1000);
    const answers = await attempt(`w${i}`);
    if (Math.floor(Date.now() / 1000) === second) return answers;
  }
  throw new Error('no attempt fell in one second');
}

/**
 * Runs `attempt` with fresh names (a user, an address) until the limiter counted all `requests` of
 * one in the same window (its counter reached `requests` without starting over), and returns that
 * attempt's answers: only those say what the limit does within a window. A limiter that counts
 * nothing never gets there, and fails.
 */
async function inOneWindow<T>(
  requests: number,
  attempt: (name: string) => Promise<{ key: string; answers: T }>,
): Promise<T> {
  for (let i = 0; i < 5; i++) {
    const { key, answers } = await attempt(`w${i}`);
    if ((await limiterCount(key)) === requests) return answers;
  }
  throw new Error(`the limiter never counted ${requests} requests in one window`);
}

describe('rate limits (shared through Redis)', () => {
  it('limits per user on the order route and per address everywhere', async () => {
    const limited = await buildApp({
      service: env.service,
      context: env.context,
      db: env.db,
      metrics: env.metrics,
      config: { ...config, rateLimitPerUser: 2, rateLimitPerIp: 0 },
    });
    const sale = await env.service.createSale({ name: 'rate limits', stock: 100, perUserLimit: 2 });
    const url = `/api/sales/${sale.id}/orders`;
    const statuses = await inOneWindow(3, async (name) => {
      const user = `frank-${name}`;
      const answers = [];
      for (let i = 0; i < 3; i++) {
        answers.push(
          (await limited.inject({ method: 'POST', url, headers: bearer(user), payload: {} })).statusCode,
        );
      }
      return { key: `user:${user}`, answers };
    });
    // Two purchase attempts per second per user: the third within the second is refused (429), even
    // before the sale's own limit (2 units) would answer 409.
    expect(statuses).toEqual([202, 202, 429]);
    const other = await limited.inject({ method: 'POST', url, headers: bearer('grace'), payload: {} });
    expect(other.statusCode).toBe(202);
    await limited.close();

    const perIp = await buildApp({
      service: env.service,
      context: env.context,
      db: env.db,
      metrics: env.metrics,
      config: { ...config, rateLimitPerUser: 0, rateLimitPerIp: 3 },
    });
    // The per-address limit counts in memory (reconciled through Redis every 100 ms): an attempt
    // counts when its five requests fell in one wall-clock second.
    const [codes, spoof, address] = await inOneSecond(async (name) => {
      const remoteAddress = `10.1.2.${name.slice(1)}`;
      const answers = [];
      for (let i = 0; i < 4; i++) {
        answers.push(
          (await perIp.inject({ method: 'GET', url: `/api/sales/${saleId}`, remoteAddress })).statusCode,
        );
      }
      // The fifth claims another address: the socket's is what counts (the counter reaches 5).
      const spoofed = await perIp.inject({
        method: 'GET',
        url: `/api/sales/${saleId}`,
        remoteAddress,
        headers: { 'x-forwarded-for': '1.2.3.4' },
      });
      return [answers, spoofed, remoteAddress] as const;
    });
    expect(codes).toEqual([200, 200, 200, 429]);
    expect([spoof.statusCode, spoof.json().error]).toEqual([429, 'rate_limited']);
    expect(Object.keys(spoof.json()).sort()).toEqual(['error', 'message']);
    // Reconciled: the three admitted requests reach the shared counter; the claimed address, refused
    // with its socket's, has none (both would go in the same reconciliation).
    await until('the address counted in Redis', async () => (await limiterCount(`ip:${address}:`)) === 3);
    expect(await limiterCount('ip:1.2.3.4')).toBe(0);
    await perIp.close();
  });
});
