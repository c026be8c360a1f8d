import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { roomKeys } from '../../src/sale/room/keys.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();
const SECRET = 'room-sold-out-secret-0123456789';
let app: FastifyInstance;
let base: string;

const bearer = (user: string, admin = false) => `Bearer ${signToken(SECRET, user, { admin })}`;

beforeAll(async () => {
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app.close();
});

async function post(path: string, user: string, body?: object, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      authorization: bearer(user),
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Joins the room and asks with the ticket until admitted (the room admits past its shuffle window). */
async function admissionOf(saleId: string, user: string): Promise<{ admission: string; ends: number }> {
  const joined = await post(`/api/sales/${saleId}/room/tickets`, user);
  expect(joined.status).toBe(201);
  let standing = joined.body;
  await until(
    `${user} to be admitted`,
    async () => {
      standing = (await post(`/api/sales/${saleId}/room/check`, user, { ticket: standing.ticket })).body;
      return standing.state === 'admitted';
    },
    30_000,
  );
  return { admission: String(standing.admission), ends: Date.parse(String(standing.admissionExpiresAt)) };
}

describe('a waiting room whose sale this process knows to be sold out', () => {
  it('frees the active slot of an admitted buyer answered from memory (gate, route hook, reservation)', async () => {
    const sale = await env.service.createSale({
      name: 'room, sold out',
      stock: 1,
      room: { ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1, maxActive: 3 },
    });
    const active = roomKeys(sale.id).active;
    const first = await admissionOf(sale.id, 'ann');
    expect(
      (await post(`/api/sales/${sale.id}/orders`, 'ann', undefined, { admission: first.admission })).status,
    ).toBe(202);
    // This process learns the sale is sold out (Redis answers one attempt; the restock channel is on).
    await until('this process to know the sale is sold out', async () => {
      await env.service.buy({ saleId: sale.id, userId: 'late', quantity: 1 });
      return env.service.refuseFromMemory(sale.id) !== undefined;
    });

    const late = ['bob', 'cat'];
    const passes = await Promise.all(late.map((user) => admissionOf(sale.id, user)));
    for (const user of late) expect(await env.redis.zscore(active, user)).not.toBeNull();

    // Bob through the listening server (the gate in front of Fastify), Cat through inject() (the
    // route's own hook): both answered sold out, and both slots freed.
    const bob = await post(`/api/sales/${sale.id}/orders`, 'bob', undefined, {
      admission: passes[0]?.admission as string,
    });
    const cat = await app.inject({
      method: 'POST',
      url: `/api/sales/${sale.id}/orders`,
      headers: { authorization: bearer('cat'), admission: passes[1]?.admission as string },
    });
    expect(bob).toEqual({ status: 409, body: { error: 'sold_out', message: 'The sale is sold out.' } });
    expect(cat.statusCode, cat.body).toBe(409);
    expect(cat.json()).toMatchObject({ error: 'sold_out' });
    // Still from memory (no restock came): the answers did not need the reservation script.
    expect(env.service.refuseFromMemory(sale.id)).toBeDefined();
    for (const user of late) expect(await env.redis.zscore(active, user)).toBeNull();
    const stats = (await (await fetch(`${base}/api/sales/${sale.id}/room`)).json()) as { active: number };
    expect(stats.active).toBe(0);
    // Purchases without an admission are still answered in front of Fastify: the room refuses them
    // anyway, and the flood after a sell-out costs no token check.
    const anonymous = await fetch(`${base}/api/sales/${sale.id}/orders`, { method: 'POST', body: 'x' });
    expect(anonymous.status).toBe(409);
  });
});
