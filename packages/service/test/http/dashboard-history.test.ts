import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import type { HttpConfig } from '../../src/http/config.js';
import { LiveFeed } from '../../src/http/dashboard/feed.js';
import { RedisHistory, type HistoryStore } from '../../src/http/dashboard/history.js';
import type { DashboardPoint, DashboardSnapshot, LiveEvents } from '../../src/http/dashboard/schemas.js';
import { readSaleStats } from '../../src/sale/stats.js';
import { useSaleStack } from '../helpers/sale.js';

/**
 * The dashboard's history in Redis, shared by every `serve` process: two app instances on the same
 * Redis and PostgreSQL (what two processes have of their own: connections, service, feed), each
 * listening, so each records as `serve` does. A browser that reloads on either gets the same history.
 */

const env = useSaleStack();
const SECRET = 'dashboard-history-secret-0123456789';
const config: HttpConfig = { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 };
const bearer = (user: string, admin = false) => ({
  authorization: `Bearer ${signToken(SECRET, user, { admin })}`,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let apps: FastifyInstance[] = [];
const urls: string[] = [];

beforeAll(async () => {
  const instances = [await env.instance(), await env.instance()];
  apps = await Promise.all(
    instances.map((instance) =>
      buildApp({
        service: instance.service,
        context: instance.context,
        db: instance.db,
        metrics: instance.metrics,
        config,
      }),
    ),
  );
  for (const app of apps) {
    await app.listen({ port: 0, host: '127.0.0.1' });
    urls.push(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
  }
});
afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
});

/** Reads a live stream until `enough` holds for what arrived; returns the events by name, in order. */
async function liveEvents(
  url: string,
  enough: (events: Array<[string, unknown]>) => boolean,
): Promise<Array<[string, unknown]>> {
  const controller = new AbortController();
  const response = await fetch(`${url}/api/live`, { signal: controller.signal });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const events: Array<[string, unknown]> = [];
  try {
    while (!enough(events)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early:\n${text}`);
      text += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) events.push([event, JSON.parse(data)]);
      }
    }
  } finally {
    controller.abort();
  }
  return events;
}

describe('the dashboard history, shared through Redis', () => {
  it('is recorded by the listening processes, one point a second, and served by either after a reload', async () => {
    const created = await apps[0]!.inject({
      method: 'POST',
      url: '/api/sales',
      headers: bearer('admin', true),
      payload: { name: 'history', stock: 10, perUserLimit: 2 },
    });
    expect(created.statusCode).toBe(201);
    const saleId = created.json().id as string;
    // Five buyers through both processes; two of them cancel (their units come back).
    const orders: Array<{ user: string; orderId: string }> = [];
    for (let i = 0; i < 5; i++) {
      const user = `h${i}`;
      const bought = await apps[i % 2]!.inject({
        method: 'POST',
        url: `/api/sales/${saleId}/orders`,
        headers: bearer(user),
      });
      expect(bought.statusCode).toBe(202);
      orders.push({ user, orderId: bought.json().orderId });
    }
    await env.pipeline().drain();
    for (const { user, orderId } of orders.slice(0, 2)) {
      const cancelled = await apps[1]!.inject({
        method: 'POST',
        url: `/api/orders/${orderId}/cancel`,
        headers: bearer(user),
      });
      expect(cancelled.statusCode).toBe(200);
    }
    await env.pipeline().drain();

    // Nobody watches: the processes record anyway while the sale is open.
    const started = Date.now();
    // Until three seconds are recorded (polled on Redis, bounded: a loaded machine records late).
    const history = new RedisHistory(env.redis);
    const recorded = () => env.redis.xrange(history.key, String(started), '+');
    await expect.poll(async () => (await recorded()).length, { timeout: 30_000 }).toBeGreaterThanOrEqual(3);
    const entries = await recorded();
    const seconds = entries.map(([id]) => id);
    for (const id of seconds) expect(id).toMatch(/^\d+000-0$/); // the start of a second
    expect(new Set(seconds.map((id) => id.split('-')[0])).size).toBe(seconds.length); // once each

    // A "reload" on the other process: a new live subscriber and the JSON route get the same points.
    const events = await liveEvents(urls[1]!, (e) => e.some(([name]) => name === 'history'));
    const [first, data] = events[0] as [string, LiveEvents['history']];
    expect(first).toBe('history');
    const streamed = data.points.filter((p) => p.t >= started);
    expect(streamed.map((p) => `${p.t}-0`)).toEqual(seconds.slice(0, streamed.length));
    const json = (
      await apps[0]!.inject({ method: 'GET', url: '/api/dashboard?history=1' })
    ).json() as DashboardSnapshot;
    const served = (json.history ?? []).filter((p) => p.t >= started);
    expect(served.slice(0, streamed.length)).toEqual(streamed);
    // Without the parameter the snapshot stays small.
    const plain = (await apps[0]!.inject({ method: 'GET', url: '/api/dashboard' })).json();
    expect(plain.history).toBeUndefined();
    expect((await apps[0]!.inject({ method: 'GET', url: '/api/dashboard?history=yes' })).statusCode).toBe(
      400,
    );

    // The units that came back: a series of the charts and numbers of the snapshot.
    const last = served[served.length - 1] as DashboardPoint;
    expect(last.sales[saleId]).toMatchObject({ remaining: 7, recordedUnits: 3, returnedUnits: 2 });
    const sale = json.sales.find((s) => s.id === saleId);
    expect(sale).toMatchObject({
      sold: 3,
      attempts: expect.anything(),
      recorded: { confirmedUnits: 3, cancelledUnits: 2, expiredUnits: 0 },
    });
  }, 30_000);
});

describe('LiveFeed history', () => {
  const counted = (prefix: string) => {
    const reads = { count: 0 };
    const feed = new LiveFeed({
      read: async () => {
        reads.count++;
        return readSaleStats({ context: env.context, db: env.db });
      },
      history: new RedisHistory(env.redis, { keyPrefix: prefix }),
    });
    return { feed, reads };
  };

  it('two recording processes read once a second between them; a third that never recorded serves their points', async () => {
    await env.service.createSale({ name: 'open', stock: 3, endsAt: new Date(Date.now() + 3_600_000) });
    const a = counted('two');
    const b = counted('two');
    const started = Date.now();
    a.feed.startRecording();
    b.feed.startRecording();
    await sleep(4200);
    a.feed.close();
    b.feed.close();
    const elapsedSeconds = Math.ceil((Date.now() - started) / 1000);
    const entries = await env.redis.xrange('two:dashboard:history', '-', '+');
    expect(entries.length).toBeGreaterThanOrEqual(3);
    // One read per second between the two (the claim), not one each.
    expect(a.reads.count + b.reads.count).toBeLessThanOrEqual(elapsedSeconds + 1);
    expect(entries.length).toBeLessThanOrEqual(a.reads.count + b.reads.count);

    // A process that never read anything: its first subscriber gets the history of the others.
    const c = counted('two');
    const chunks: string[] = [];
    const stop = c.feed.subscribe((chunk) => chunks.push(chunk));
    while (chunks.length === 0) await sleep(20);
    stop();
    c.feed.close();
    const history = JSON.parse(/^event: history\ndata: (.*)$/m.exec(chunks[0] as string)?.[1] ?? '{}')
      .points as DashboardPoint[];
    expect(history.map((p) => `${p.t}-0`)).toEqual(entries.map(([id]) => id));
  }, 20_000);

  it('a history Redis cannot read gives the page an empty history and the unavailable state', async () => {
    const broken: HistoryStore = {
      claim: async () => {
        throw new Error('Connection is closed.');
      },
      idle: async () => undefined,
      append: async () => {
        throw new Error('Connection is closed.');
      },
      read: async () => {
        throw new Error('Connection is closed.');
      },
    };
    const feed = new LiveFeed({ tickMs: 50, read: async () => [], history: broken });
    const chunks: string[] = [];
    const stop = feed.subscribe((chunk) => chunks.push(chunk));
    while (!chunks.some((c) => c.startsWith('event: tick'))) await sleep(20);
    stop();
    feed.close();
    expect(chunks[0]).toMatch(/^event: history\ndata: \{"points":\[\]\}\n\nevent: unavailable\n/);
    expect(chunks.some((c) => c.startsWith('event: tick'))).toBe(true); // the numbers still flow
  });
});
