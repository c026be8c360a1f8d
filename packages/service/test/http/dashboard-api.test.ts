import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import type { HttpConfig } from '../../src/http/config.js';
import { LiveFeed } from '../../src/http/dashboard/feed.js';
import type { DashboardSnapshot, LiveSale } from '../../src/http/dashboard/schemas.js';
import { SaleActivity } from '../../src/sale/activity.js';
import { saleKeys } from '../../src/sale/keys.js';
import type { SaleStats } from '../../src/sale/stats.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();
const SECRET = 'dashboard-secret-0123456789abcdef';
const config: HttpConfig = { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0, demoBuyers: true };
const bearer = (user: string, admin = false) => ({
  authorization: `Bearer ${signToken(SECRET, user, { admin })}`,
});

// Two instances of the app in this process, each with what a `serve` process has of its own: a
// service (its Redis connection, PostgreSQL pool, sold-out cache, metrics) and an activity buffer, on
// the same Redis and database. (Two real `serve` processes: dashboard.test.ts.)
let apps: FastifyInstance[];
let activities: SaleActivity[];

beforeAll(async () => {
  const instances = [await env.instance(), await env.instance()];
  activities = instances.map((i) => new SaleActivity(i.context)); // flushed by hand, no timer
  apps = await Promise.all(
    instances.map((instance, i) =>
      buildApp({
        service: instance.service,
        context: instance.context,
        db: instance.db,
        metrics: instance.metrics,
        config,
        activity: activities[i] as SaleActivity,
      }),
    ),
  );
});
afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
});

const app = (i: number) => apps[i % apps.length] as FastifyInstance;

async function createSale(body: Record<string, unknown>): Promise<string> {
  const created = await app(0).inject({
    method: 'POST',
    url: '/api/sales',
    headers: bearer('admin', true),
    payload: body,
  });
  expect(created.statusCode).toBe(201);
  return created.json().id as string;
}

/** The dashboard JSON is cached for one tick; a fresh read needs the next one. */
async function freshLiveSale(id: string, after: number): Promise<LiveSale> {
  for (;;) {
    const response = await app(1).inject({ method: 'GET', url: '/api/dashboard' });
    const snapshot = response.json() as DashboardSnapshot;
    const sale = snapshot.sales.find((s) => s.id === id);
    if (sale && Date.parse(snapshot.at) > after) return sale;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('dashboard API', () => {
  it('counts attempts and visitors in memory, flushes them to shared Redis keys, and reports global numbers', async () => {
    const saleId = await createSale({ name: 'counted', stock: 5, perUserLimit: 2 });
    const keys = saleKeys(saleId);
    const attempts: Array<[user: string, quantity: number, expected: string]> = [
      ['buyer0', 1, 'reserved'],
      ['buyer1', 1, 'reserved'],
      ['buyer0', 1, 'reserved'],
      ['buyer0', 1, 'limit_reached'],
      ['buyer2', 2, 'reserved'],
      ['buyer3', 1, 'sold_out'],
      ['buyer1', 1, 'sold_out'],
      ['buyer3', 1, 'sold_out'],
    ];
    // Alternating between the two apps.
    for (const [i, [user, quantity, expected]] of attempts.entries()) {
      const response = await app(i).inject({
        method: 'POST',
        url: `/api/sales/${saleId}/orders`,
        headers: bearer(user),
        payload: { quantity },
      });
      expect([i, response.statusCode === 202 ? 'reserved' : response.json().error]).toEqual([i, expected]);
    }
    // Looking counts as visiting: an anonymous address, and a user who also bought (counted once).
    await app(0).inject({ method: 'GET', url: `/api/sales/${saleId}`, remoteAddress: '10.9.8.7' });
    await app(1).inject({ method: 'GET', url: `/api/sales/${saleId}`, headers: bearer('buyer0') });
    // An unknown sale is neither counted nor given keys.
    await app(0).inject({
      method: 'POST',
      url: '/api/sales/999999/orders',
      headers: bearer('x'),
      payload: {},
    });

    // Nothing reached Redis yet: the purchase path only touched memory.
    expect(await env.redis.exists(keys.outcomes, keys.visitors)).toBe(0);
    await Promise.all(activities.map((a) => a.flush()));
    expect(await env.redis.exists(saleKeys('999999').outcomes, saleKeys('999999').visitors)).toBe(0);

    const live = await freshLiveSale(saleId, Date.now());
    expect(live.attempts).toMatchObject({ reserved: 4, limit_reached: 1, sold_out: 3, not_started: 0 });
    expect(live.visitors).toBe(5); // buyer0..3 and one address
    const view = (await app(0).inject({ method: 'GET', url: `/api/sales/${saleId}` })).json();
    expect(live).toMatchObject({ remaining: view.remaining, sold: view.sold, status: view.status });

    // Before the pipeline ran: everything is pending, nothing recorded.
    expect(live.pipeline.pending + live.pipeline.undelivered).toBe(4);
    expect(live.pipeline.lagMs).not.toBeNull();
    expect(live.recorded.confirmedOrders).toBe(0);

    await env.pipeline().drain();
    const recorded = await freshLiveSale(saleId, Date.now());
    const { rows } = await env.db.query<{ orders: number; units: number; buyers: number }>(
      `SELECT count(*)::int AS orders, coalesce(sum(quantity), 0)::int AS units,
              count(DISTINCT user_id)::int AS buyers
         FROM orders WHERE sale_id = $1 AND status = 'confirmed'`,
      [saleId],
    );
    expect(recorded.recorded).toEqual({
      confirmedOrders: rows[0]?.orders,
      confirmedUnits: rows[0]?.units,
      rejectedOrders: 0,
      cancelledUnits: 0,
      expiredUnits: 0,
    });
    expect(recorded.recorded.confirmedUnits).toBe(5);
    expect(recorded.buyers).toBe(3);
    expect(recorded.buyers).toBe(rows[0]?.buyers);
    expect(recorded.conversion).toBeCloseTo((rows[0]?.buyers ?? 0) / 5);
    expect(recorded.pipeline).toEqual({ pending: 0, undelivered: 0, lagMs: null, deadLetters: 0 });
  });

  it('shows dead letters and the pipeline backlog from the streams', async () => {
    const saleId = await createSale({ name: 'poisoned', stock: 3 });
    const keys = saleKeys(saleId);
    await env.redis.xadd(keys.stream, '*', 'garbage', 'yes'); // not a reservation: dead-lettered
    const stuck = await freshLiveSale(saleId, Date.now());
    expect(stuck.pipeline.undelivered).toBe(1);
    await env.pipeline().drain();
    const after = await freshLiveSale(saleId, Date.now());
    expect(after.pipeline).toMatchObject({ pending: 0, undelivered: 0, deadLetters: 1 });
  });

  it('reconciles for admins only; without repair it changes nothing, with repair it fixes Redis', async () => {
    const saleId = await createSale({ name: 'drifting', stock: 4 });
    for (const user of ['r1', 'r2']) {
      await app(0).inject({ method: 'POST', url: `/api/sales/${saleId}/orders`, headers: bearer(user) });
    }
    await env.pipeline().drain();
    const keys = saleKeys(saleId);
    await env.redis.set(keys.stock, 3); // Redis offers one unit too many

    const url = '/api/reconcile';
    expect((await app(0).inject({ method: 'POST', url })).statusCode).toBe(401);
    const buyer = await app(0).inject({ method: 'POST', url, headers: bearer('r1'), payload: {} });
    expect([buyer.statusCode, buyer.json().error]).toEqual([403, 'forbidden']);
    const bad = await app(0).inject({
      method: 'POST',
      url,
      headers: bearer('a', true),
      payload: { repair: 'yes' },
    });
    expect(bad.statusCode).toBe(400);

    const state = async () => ({
      stock: await env.redis.get(keys.stock),
      buyers: await env.redis.hgetall(keys.buyers),
      sold: (await env.db.query('SELECT sold FROM sales WHERE id = $1', [saleId])).rows,
    });
    const before = await state();
    const check = await app(1).inject({ method: 'POST', url, headers: bearer('a', true) }); // no body
    expect(check.statusCode).toBe(200);
    expect(check.json().repaired).toBe(false);
    expect(check.json().sales.find((s: { saleId: string }) => s.saleId === saleId)).toEqual({
      saleId,
      stock: 4,
      redisRemaining: 3,
      heldOffers: 0,
      recordedUnits: 2,
      inFlightUnits: 0,
      drift: -1,
      buyersBelowRecord: 0,
      unscheduledOrders: 0,
      condition: 'ok',
    });
    expect(await state()).toEqual(before);

    const repair = await app(1).inject({
      method: 'POST',
      url,
      headers: bearer('a', true),
      payload: { repair: true },
    });
    expect(repair.json().sales.find((s: { saleId: string }) => s.saleId === saleId)).toMatchObject({
      drift: -1,
      repairedRemaining: 2,
    });
    expect(await env.redis.get(keys.stock)).toBe('2');
  });

  it('issues demo buyer tokens only when demo buyers are on', async () => {
    const off = await buildApp({
      service: env.service,
      context: env.context,
      db: env.db,
      metrics: env.metrics,
      config: { ...config, demoBuyers: false },
    });
    try {
      const refused = await off.inject({ method: 'POST', url: '/api/demo/token' });
      expect([refused.statusCode, refused.json().error]).toEqual([403, 'forbidden']);
    } finally {
      await off.close();
    }
    const saleId = await createSale({ name: 'demo', stock: 1 });
    const issued = await app(0).inject({ method: 'POST', url: '/api/demo/token' });
    expect(issued.statusCode).toBe(201);
    const { userId, token } = issued.json();
    expect(userId).toMatch(/^demo-[0-9a-f]{12}$/);
    const other = (await app(0).inject({ method: 'POST', url: '/api/demo/token' })).json();
    expect(other.userId).not.toBe(userId); // a fresh buyer every time
    const bought = await app(0).inject({
      method: 'POST',
      url: `/api/sales/${saleId}/orders`,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(bought.statusCode).toBe(202);
    const order = await app(0).inject({
      method: 'GET',
      url: `/api/orders/${bought.json().orderId}`,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(order.json().userId).toBe(userId);
  });

  it('serves the page with its assets and uPlot from the package, and streams snapshots', async () => {
    const page = await app(0).inject({ method: 'GET', url: '/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    const uplot = await app(0).inject({ method: 'GET', url: '/vendor/uplot.js' });
    expect([uplot.statusCode, uplot.headers['content-type']]).toEqual([
      200,
      'text/javascript; charset=utf-8',
    ]);
    expect(uplot.body).toContain('uPlot');
    const cached = await app(0).inject({
      method: 'GET',
      url: '/vendor/uplot.js',
      headers: { 'if-none-match': String(uplot.headers.etag) },
    });
    expect(cached.statusCode).toBe(304);
    const css = await app(0).inject({ method: 'GET', url: '/dashboard/dashboard.css' });
    expect(css.statusCode).toBe(200);
    for (const [url, status] of [
      ['/dashboard/..%2fschemas.ts', 400],
      ['/dashboard/index.html', 400],
      ['/dashboard/nope.css', 404],
      ['/vendor/nope.js', 404],
    ] as const) {
      const missing = await app(0).inject({ method: 'GET', url });
      expect([url, missing.statusCode, typeof missing.json().message]).toEqual([url, status, 'string']);
    }

    // Server-Sent Events need a real socket.
    const live = await buildApp({
      service: env.service,
      context: env.context,
      db: env.db,
      metrics: env.metrics,
      config,
    });
    await live.listen({ port: 0, host: '127.0.0.1' });
    const { port } = live.server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/api/live`);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!/event: tick\ndata: .*\n\n/.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early:\n${text}`);
      text += decoder.decode(value, { stream: true });
    }
    expect(text.indexOf('event: history')).toBeLessThan(text.indexOf('event: tick'));
    const tick = JSON.parse(/event: tick\ndata: (.*)\n\n/.exec(text)?.[1] ?? '{}');
    expect(tick.snapshot.sales.length).toBeGreaterThan(0);
    expect(Object.keys(tick.point.sales).sort()).toEqual(
      tick.snapshot.sales.map((s: LiveSale) => s.id).sort(),
    );
    // Closing the app ends the live response instead of waiting for the browser to leave.
    await live.close();
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
    }
  });
});

describe('LiveFeed', () => {
  it('reads once per tick however many subscribers watch, and stops when the last one leaves', async () => {
    let reads = 0;
    const stats: SaleStats[] = [];
    const feed = new LiveFeed({
      tickMs: 40,
      read: async () => {
        reads++;
        return stats;
      },
    });
    const received = [[], [], []] as string[][];
    const unsubscribe = received.map((chunks) => feed.subscribe((chunk) => chunks.push(chunk)));
    const ticks = (chunks: string[]) => chunks.filter((c) => c.startsWith('event: tick')).length;
    while (received.some((chunks) => ticks(chunks) < 5)) await new Promise((r) => setTimeout(r, 20));
    // Every subscriber got the same ticks; the reads were per tick, not per subscriber.
    const counts = received.map(ticks);
    expect(reads).toBeLessThanOrEqual(Math.max(...counts) + 1);
    expect(received.every((chunks) => chunks[0]?.startsWith('event: history'))).toBe(true);
    for (const stop of unsubscribe) stop();
    const stoppedAt = reads;
    await new Promise((r) => setTimeout(r, 200)); // five tick periods: none may read
    expect(reads).toBe(stoppedAt);
    feed.close();
  });
});
