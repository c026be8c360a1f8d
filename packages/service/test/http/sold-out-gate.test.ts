import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { saleKeys } from '../../src/sale/keys.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();
const SECRET = 'test-secret-0123456789abcdef';
let app: FastifyInstance;
let base: string;
/** Requests that reached Fastify (its first hook). */
let reached = 0;

beforeAll(async () => {
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    reached++;
    done();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app.close();
});

const attempt = (saleId: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/api/sales/${saleId}/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: 'not even JSON',
  });

async function answered409s(): Promise<number> {
  const text = await env.metrics.registry.getSingleMetricAsString('lockstock_http_request_seconds');
  const line = text
    .split('\n')
    .find((l) => l.startsWith('lockstock_http_request_seconds_count') && l.includes('status="409"'));
  return Number(line?.split(' ').pop() ?? 0);
}

describe('the sold-out gate of a listening server', () => {
  it('answers attempts on a sold-out sale in front of Fastify (no routing, no hooks, no body, no token)', async () => {
    const sale = await env.service.createSale({ name: 'gone at once', stock: 1 });
    expect((await env.service.buy({ saleId: sale.id, userId: 'lucky', quantity: 1 })).ok).toBe(true);
    await until('this process to know the sale is sold out', async () => {
      await env.service.buy({ saleId: sale.id, userId: 'late', quantity: 1 }); // refused by Redis
      return env.service.refuseFromMemory(sale.id) !== undefined;
    });
    const counted = await answered409s();
    const before = reached;
    const streamLength = () => env.redis.xlen(saleKeys(sale.id).stream);
    const entries = await streamLength();

    const answers = await Promise.all(Array.from({ length: 20 }, () => attempt(sale.id)));
    for (const answer of answers) {
      expect(answer.status).toBe(409);
      expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await answer.json()).toEqual({ error: 'sold_out', message: 'The sale is sold out.' });
    }
    expect(reached).toBe(before); // none of them reached Fastify
    // Counted like any answer of the route (the request-duration metric, by route and status).
    expect(await answered409s()).toBe(counted + 20);

    // A retry with an Idempotency-Key goes on to Fastify (which refuses this body: it is not JSON).
    expect((await attempt(sale.id, { 'idempotency-key': 'k1' })).status).toBe(400);
    expect(reached).toBe(before + 1);
    // So does anything else on the route: a sale still selling, another method, a query string.
    const open = await env.service.createSale({ name: 'still selling', stock: 5 });
    expect((await attempt(open.id)).status).toBe(400);
    expect((await fetch(`${base}/api/sales/${sale.id}/orders`)).status).toBe(404);
    const withQuery = await fetch(`${base}/api/sales/${sale.id}/orders?again=1`, { method: 'POST' });
    expect(withQuery.status).toBe(409); // by the route's own hook, the same answer
    expect(reached).toBe(before + 4);
    // Nothing reached Redis's sale: no reservation was appended.
    expect(await streamLength()).toBe(entries);
  });
});
