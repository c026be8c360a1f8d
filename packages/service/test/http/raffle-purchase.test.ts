import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import type { HttpConfig } from '../../src/http/config.js';
import { useSaleStack } from '../helpers/sale.js';

// A purchase attempt on a raffle sale says it is a raffle and where to enter (409 raffle_sale), not
// "not started"; a first-come sale that has not started still answers not_started.
const env = useSaleStack();
const SECRET = 'raffle-purchase-secret-0123456789';
const config: HttpConfig = { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 };
let app: FastifyInstance;
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
});
afterAll(async () => {
  await app.close();
});

async function createSale(payload: object): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/sales',
    headers: bearer('admin', true),
    payload: { name: 'raffle purchase', stock: 3, ...payload },
  });
  expect(created.statusCode, created.body).toBe(201);
  return String(created.json().id);
}

const buy = (saleId: string) =>
  app.inject({ method: 'POST', url: `/api/sales/${saleId}/orders`, headers: bearer('buyer') });

describe('POST /api/sales/:id/orders on a raffle sale', () => {
  it('answers 409 raffle_sale naming the entries route, and sells nothing', async () => {
    const id = await createSale({ admission: 'raffle' });
    const refused = await buy(id);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      error: 'raffle_sale',
      message: `Sale ${id} is a raffle: enter at POST /api/sales/${id}/raffle/entries.`,
    });
    const { rows } = await env.db.query('SELECT count(*)::int AS n FROM orders WHERE sale_id = $1', [id]);
    expect(rows).toEqual([{ n: 0 }]);
    const entered = await app.inject({
      method: 'POST',
      url: `/api/sales/${id}/raffle/entries`,
      headers: bearer('buyer'),
    });
    expect(entered.statusCode, entered.body).toBeLessThan(300);
  });

  it('answers a waitlist join 409 raffle_sale too (its own waitlist serves it), and queues nobody', async () => {
    const id = await createSale({ admission: 'raffle' });
    const join = (user: string) =>
      app.inject({ method: 'POST', url: `/api/sales/${id}/waitlist`, headers: bearer(user) });
    const refused = await join('joiner');
    expect([refused.statusCode, refused.json()]).toEqual([
      409,
      { error: 'raffle_sale', message: `Sale ${id} is a raffle: its own waitlist serves it.` },
    ]);
    expect(await env.service.waitlist.standing(id, 'joiner')).toEqual({ state: 'none' });
  });

  it('still answers not_started for a first-come sale that has not started', async () => {
    const startsAt = new Date(Date.now() + 3_600_000).toISOString();
    const id = await createSale({ startsAt });
    const refused = await buy(id);
    expect([refused.statusCode, refused.json().error]).toEqual([409, 'not_started']);
  });

  it('documents raffle_sale in the OpenAPI document', async () => {
    const spec = (await app.inject({ method: 'GET', url: '/docs/json' })).json();
    const buyOp = spec.paths?.['/api/sales/{id}/orders']?.post;
    expect(buyOp?.description).toContain('raffle_sale');
  });
});
