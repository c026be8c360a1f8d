import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();
const SECRET = 'sales-list-secret-0123456789';
let app: FastifyInstance;
const ids: Record<'scheduled' | 'active' | 'soldOut' | 'ended', string> = {} as never;

beforeAll(async () => {
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  const day = 86_400_000;
  ids.ended = (await env.service.createSale({ name: 'ended', stock: 5 })).id;
  // Ended: its window moved into the past in the record (a sale cannot be created that way).
  await env.db.query(
    "UPDATE sales SET starts_at = now() - interval '2 days', ends_at = now() - interval '1 day' WHERE id = $1",
    [ids.ended],
  );
  ids.soldOut = (await env.service.createSale({ name: 'sold out', stock: 1 })).id;
  const bought = await app.inject({
    method: 'POST',
    url: `/api/sales/${ids.soldOut}/orders`,
    headers: { authorization: `Bearer ${signToken(SECRET, 'buyer')}` },
    payload: {},
  });
  expect(bought.statusCode).toBe(202);
  ids.active = (await env.service.createSale({ name: 'active', stock: 5 })).id;
  ids.scheduled = (
    await env.service.createSale({ name: 'scheduled', stock: 5, startsAt: new Date(Date.now() + day) })
  ).id;
});
afterAll(async () => {
  await app.close();
});

const list = async (query: string) => {
  const response = await app.inject({ method: 'GET', url: `/api/sales${query}` });
  return {
    status: response.statusCode,
    body: response.json() as { sales: Array<{ id: string; status: string }>; next?: string },
  };
};

describe('GET /api/sales', () => {
  it('pages through every sale, newest first, each once', async () => {
    const seen: string[] = [];
    let query = '?limit=2';
    for (let page = 0; page < 10; page++) {
      const { status, body } = await list(query);
      expect(status).toBe(200);
      expect(body.sales.length).toBeLessThanOrEqual(2);
      seen.push(...body.sales.map((s) => s.id));
      if (!body.next) break;
      query = `?limit=2&before=${body.next}`;
    }
    expect(seen).toEqual([ids.scheduled, ids.active, ids.soldOut, ids.ended]);
  });

  it('narrows by status, decided per sale as GET /api/sales/:id decides it', async () => {
    for (const [status, id] of [
      ['scheduled', ids.scheduled],
      ['active', ids.active],
      ['sold_out', ids.soldOut],
      ['ended', ids.ended],
    ] as const) {
      const { body } = await list(`?status=${status}`);
      expect(body.sales.map((s) => [s.id, s.status])).toEqual([[id, status]]);
      const one = await app.inject({ method: 'GET', url: `/api/sales/${id}` });
      expect(body.sales[0]).toEqual(one.json());
    }
  });

  it('refuses a bad query with a 400 in the API shape', async () => {
    for (const query of ['?limit=0', '?limit=101', '?limit=x', '?status=open', '?before=01', '?page=2']) {
      const { status, body } = await list(query);
      expect([query, status, (body as unknown as { error: string }).error]).toEqual([
        query,
        400,
        'bad_request',
      ]);
    }
  });
});
