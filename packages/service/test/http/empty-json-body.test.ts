import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import type { HttpConfig } from '../../src/http/config.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();
const SECRET = 'test-secret-0123456789abcdef';
const config: HttpConfig = { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 };
let app: FastifyInstance;
let saleId: string;

const headers = (user: string, admin = false) => ({
  authorization: `Bearer ${signToken(SECRET, user, { admin })}`,
  'content-type': 'application/json', // as `curl -X POST -H 'Content-Type: application/json'` sends it
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
    headers: headers('admin', true),
    payload: { name: 'empty bodies', stock: 10, payWithinSeconds: 600 },
  });
  expect(created.statusCode).toBe(201);
  saleId = created.json().id;
});
afterAll(async () => {
  await app.close();
});

/** POST with `Content-Type: application/json` and no body at all (Content-Length: 0). */
const postEmpty = (url: string, user: string, admin = false) =>
  app.inject({ method: 'POST', url, headers: { ...headers(user, admin), 'content-length': '0' } });

describe('an action sent as JSON without a body', () => {
  it('buys one unit, pays and cancels: an empty JSON body is no body, not a bad request', async () => {
    const paid = await postEmpty(`/api/sales/${saleId}/orders`, 'ann');
    expect([paid.statusCode, paid.json()]).toEqual([202, expect.objectContaining({ status: 'reserved' })]);
    const cancelled = await postEmpty(`/api/sales/${saleId}/orders`, 'bob');
    expect(cancelled.statusCode).toBe(202);
    await env.pipeline().drain();

    const pay = await postEmpty(`/api/orders/${paid.json().orderId}/pay`, 'ann');
    expect([pay.statusCode, pay.json().status]).toEqual([200, 'paid']);
    const cancel = await postEmpty(`/api/orders/${cancelled.json().orderId}/cancel`, 'bob');
    expect([cancel.statusCode, cancel.json().status]).toEqual([200, 'cancelled']);
    const reconcile = await postEmpty('/api/reconcile', 'admin', true);
    expect(reconcile.statusCode).toBe(200); // its body ({ repair? }) is optional too
  });

  it('still refuses what is not JSON, a body that is only blanks, and a body a route requires', async () => {
    const url = `/api/sales/${saleId}/orders`;
    for (const payload of ['{', ' ', '{"__proto__": {"x": 1}}']) {
      const answer = await app.inject({ method: 'POST', url, headers: headers('carl'), payload });
      expect([payload, answer.statusCode, answer.json().error]).toEqual([payload, 400, 'bad_request']);
    }
    const sale = await postEmpty('/api/sales', 'admin', true); // a new sale needs its name and stock
    expect([sale.statusCode, sale.json().error]).toEqual([400, 'bad_request']);
  });
});
