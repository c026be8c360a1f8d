import { mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PostgresServer, RedisServer } from '@lockstock/servers';
import { signToken } from '../../src/http/auth.js';
import { saleKeys } from '../../src/sale/keys.js';
import { launchChromium, until } from '../helpers/browser.js';
import { spawnCli, waitUntilHealthy, type CliProcess } from '../helpers/cli.js';

/**
 * The dashboard in a real browser, on two real `serve` processes sharing one Redis and one
 * PostgreSQL: the page is opened on one while buyers go through both, and what it shows is compared
 * with the API and with PostgreSQL — never with what the page itself believes.
 */

const SECRET = 'dashboard-e2e-secret-0123456789';
const ADMIN = signToken(SECRET, 'ops', { admin: true });
/** `LOCKSTOCK_UPDATE_SCREENSHOT=1` refreshes the README's screenshot; otherwise it goes to a temp dir. */
const README_SCREENSHOT = fileURLToPath(new URL('../../../../docs/dashboard.png', import.meta.url));
const RELOAD_SCREENSHOT = fileURLToPath(
  new URL('../../../../docs/dashboard-after-reload.png', import.meta.url),
);

let redis: RedisServer;
let postgres: PostgresServer;
let redisClient: Redis;
let db: pg.Pool;
let browser: Browser;
let page: Page;
let tmp: string;
const processes: CliProcess[] = [];
const servers: string[] = [];
const pageProblems: string[] = [];

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'lockstock-dashboard-'));
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  redisClient = new Redis(redis.url);
  db = new pg.Pool({ connectionString: postgres.url, max: 2 });
  db.on('error', () => undefined); // idle connections see the server shut down at the end
  const env = {
    LOCKSTOCK_JWT_SECRET: SECRET,
    LOCKSTOCK_RATE_LIMIT_PER_IP: '0', // the test and the browser share one address
    LOCKSTOCK_RATE_LIMIT_PER_USER: '0',
    LOCKSTOCK_DEMO: '1', // demo buyers, although Redis and PostgreSQL are "real deployments"
  };
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    processes.push(
      spawnCli(['serve', '--port', String(port), '--redis', redis.url, '--database', postgres.url], env),
    );
    servers.push(`http://127.0.0.1:${port}`);
    await waitUntilHealthy(`${servers[i]}/healthz`); // one at a time: they migrate the same database
  }
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.on('pageerror', (error) => pageProblems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    // Chromium logs every 4xx answer; the panels show refusals on purpose (403, 409).
    const refusal = /^Failed to load resource: the server responded with a status of 4\d\d/;
    if (message.type() === 'error' && !refusal.test(message.text()))
      pageProblems.push(`console: ${message.text()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const p of processes) p.kill('SIGTERM');
  await Promise.all(processes.map((p) => p.exited));
  redisClient?.disconnect();
  await db?.end();
  await Promise.all([redis?.stop(), postgres?.stop()]);
  await rm(tmp, { recursive: true, force: true });
});

async function api(
  method: 'GET' | 'POST',
  url: string,
  token?: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const buy = (server: string, saleId: string, user: string) =>
  api('POST', `${server}/api/sales/${saleId}/orders`, signToken(SECRET, user), { quantity: 1 });

/** The little of the DOM the card reader uses (the test's tsconfig has no DOM library). */
interface DomNode {
  textContent: string | null;
  getAttribute(name: string): string | null;
  querySelector(selector: string): DomNode | null;
  querySelectorAll(selector: string): ArrayLike<DomNode>;
}

/**
 * What a sale's card shows, as text, read in one step: the page updates a card in one task per
 * tick, so the fields read together belong to the same snapshot.
 */
async function card(saleId: string) {
  const texts = await page.locator(`article.sale[data-sale="${saleId}"]`).evaluate((element) => {
    const root = element as unknown as DomNode;
    const read: Record<string, string> = {};
    for (const node of Array.from(root.querySelectorAll('[data-field]'))) {
      read[node.getAttribute('data-field') ?? ''] = node.textContent ?? '';
    }
    for (const node of Array.from(root.querySelectorAll('[data-outcome]'))) {
      read[`outcome:${node.getAttribute('data-outcome')}`] = node.querySelector('.count')?.textContent ?? '';
    }
    read.statusCode = root.querySelector('[data-field="status"]')?.getAttribute('data-status') ?? '';
    read.stockPoints = root.querySelector('[data-chart="stock"]')?.getAttribute('data-points') ?? '';
    return read;
  });
  const text = (name: string) => texts[name] ?? '';
  return {
    remaining: text('remaining'),
    sold: text('held'),
    reservedTile: text('reserved'),
    returned: text('returned'),
    returnedDetail: text('returned-detail'),
    stockPoints: text('stockPoints'),
    recorded: text('recorded'),
    recordedUnits: text('recorded-units'),
    rejected: text('rejected'),
    dead: text('dead'),
    pending: text('pending'),
    visitors: text('visitors'),
    buyers: text('buyers'),
    conversion: text('conversion'),
    status: text('statusCode'),
    reserved: text('outcome:reserved'),
    soldOut: text('outcome:sold_out'),
    limit: text('outcome:limit_reached'),
  };
}

/** "12,345" → 12345 (NaN for anything else, so a wrong text never passes as a number). */
const num = (text: string) => (/^[\d,]+$/.test(text.trim()) ? Number(text.replace(/,/g, '')) : NaN);

async function recorded(saleId: string) {
  const { rows } = await db.query<{ confirmed: number; rejected: number; units: number; buyers: number }>(
    `SELECT count(*) FILTER (WHERE status = 'confirmed')::int AS confirmed,
            count(*) FILTER (WHERE status = 'rejected')::int AS rejected,
            coalesce(sum(quantity) FILTER (WHERE status = 'confirmed'), 0)::int AS units,
            count(DISTINCT user_id) FILTER (WHERE status = 'confirmed')::int AS buyers
       FROM orders WHERE sale_id = $1`,
    [saleId],
  );
  return rows[0] as { confirmed: number; rejected: number; units: number; buyers: number };
}

/** Pixels of a chart's canvas drawn opaque in (about) this colour: a series was plotted. */
async function pixelsOf(saleId: string, chart: string, [r, g, b]: [number, number, number]): Promise<number> {
  return page.locator(`article.sale[data-sale="${saleId}"] [data-chart="${chart}"] canvas`).evaluate(
    (canvas, [r, g, b]) => {
      const c = canvas as unknown as {
        width: number;
        height: number;
        getContext(kind: '2d'): {
          getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
        };
      };
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      let count = 0;
      for (let i = 0; i < data.length; i += 4) {
        const close = Math.abs(data[i]! - r) + Math.abs(data[i + 1]! - g) + Math.abs(data[i + 2]! - b) < 60;
        if (close && data[i + 3]! > 200) count++;
      }
      return count;
    },
    [r, g, b] as const,
  );
}

const tally: Record<string, number> = {};
const users = new Set<string>();
let saleId: string;
let uiSaleId: string;

describe('the live dashboard (two serve processes, headless Chromium)', () => {
  it('shows a sale draining while it is bought through both processes, agreeing with the API and PostgreSQL', async () => {
    const created = await api('POST', `${servers[0]}/api/sales`, ADMIN, {
      name: 'Midnight sneaker drop',
      stock: 60,
      perUserLimit: 2,
    });
    expect(created.status).toBe(201);
    saleId = String(created.body.id);

    await page.goto(`${servers[0]}/`); // the page is on process A
    await until(
      'the sale card',
      () => card(saleId),
      (c) => num(c.remaining) === 60,
    );
    await until(
      'the live stream',
      () => page.locator('#connection').getAttribute('data-state'),
      (s) => s === 'live',
    );

    // Waves of buyers; after each, the page (on A) must show what the API says, including purchases
    // that went through B: the numbers are global.
    const waves: Array<Array<[server: number, user: string]>> = [
      Array.from({ length: 20 }, (_, i) => [1, `u${i}`]), // 20 units through B
      [
        ...Array.from({ length: 20 }, (_, i) => [0, `u${20 + i}`]),
        ...Array.from({ length: 5 }, (_, i) => [1, `u${i}`]),
      ],
      [
        ...Array.from({ length: 5 }, (_, i) => [0, `u${i}`]),
        ...Array.from({ length: 10 }, (_, i) => [1, `u${40 + i}`]),
      ],
      Array.from({ length: 20 }, (_, i) => [i % 2, `u${50 + i}`]), // 5 units left for 20 buyers
    ] as Array<Array<[number, string]>>;
    let previousSold = 0;
    for (const wave of waves) {
      // Every buyer of a wave starts before any answer is awaited.
      const answers = await Promise.all(
        wave.map(([server, user]) => buy(servers[server] as string, saleId, user)),
      );
      for (const [i, answer] of answers.entries()) {
        users.add((wave[i] as [number, string])[1]);
        const key = answer.status === 202 ? 'reserved' : String(answer.body.error);
        tally[key] = (tally[key] ?? 0) + 1;
      }
      const view = await api('GET', `${servers[1]}/api/sales/${saleId}`);
      expect(view.body.sold).toBeGreaterThan(previousSold);
      previousSold = Number(view.body.sold);
      await until(
        `the page to show ${view.body.sold} sold`,
        () => card(saleId),
        (c) => num(c.sold) === view.body.sold && num(c.remaining) === view.body.remaining,
      );
    }
    expect(tally).toEqual({ reserved: 60, limit_reached: 5, sold_out: 15 });

    // Once the pipelines have recorded every order, the page agrees with PostgreSQL.
    const record = await until(
      'every order recorded',
      () => recorded(saleId),
      (r) => r.confirmed === 60,
    );
    const { rows } = await db.query<{ buyers: number }>(
      'SELECT count(*)::int AS buyers FROM purchases WHERE sale_id = $1 AND quantity > 0',
      [saleId],
    );
    const buyers = rows[0]?.buyers ?? -1;
    const deadLetters = await redisClient.xlen(saleKeys(saleId).dead);
    const shown = await until(
      'the page to show the record and every attempt',
      () => card(saleId),
      (c) =>
        num(c.recorded) === record.confirmed &&
        num(c.pending) === 0 &&
        num(c.reserved) === tally.reserved &&
        num(c.soldOut) === tally.sold_out &&
        num(c.limit) === tally.limit_reached,
    );
    const view = await api('GET', `${servers[0]}/api/sales/${saleId}`);
    expect(view.body).toMatchObject({ remaining: 0, sold: 60, status: 'sold_out' });
    expect(shown).toMatchObject({
      remaining: '0',
      sold: '60',
      status: 'sold_out',
      recordedUnits: `${record.units} units`,
      rejected: String(record.rejected),
      dead: String(deadLetters),
      buyers: String(buyers),
    });
    expect(buyers).toBe(record.buyers);
    // Visitors: the users who tried, and this test's address (it looked at the sale without a token);
    // a HyperLogLog estimate, close to exact at this size.
    expect(Math.abs(num(shown.visitors) - (users.size + 1))).toBeLessThanOrEqual(2);
    const conversion = Number.parseFloat(shown.conversion);
    expect(Math.abs(conversion - (100 * buyers) / num(shown.visitors))).toBeLessThan(0.1);

    // The charts drew: the stock line (blue) and reserved attempts per second (green).
    expect(await pixelsOf(saleId, 'stock', [96, 165, 250])).toBeGreaterThan(50);
    expect(await pixelsOf(saleId, 'rates', [52, 211, 153])).toBeGreaterThan(20);
    expect(pageProblems).toEqual([]);
  }, 120_000);

  it('creates a sale from the admin panel, with the admin token only', async () => {
    const { rows: before } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM sales');
    const form = page.locator('#create-sale');
    await form.locator('[name="name"]').fill('Limited vinyl');
    await form.locator('[name="stock"]').fill('3');
    await form.locator('[name="perUserLimit"]').fill('2');

    // A buyer's token is refused, and the page says so.
    await page.locator('#admin-token').fill(signToken(SECRET, 'mallory'));
    await page.locator('#admin-token-form button').click();
    await expectText('#admin-who', /mallory — not an admin token/);
    await form.locator('button[type="submit"]').click();
    await until(
      'the refusal',
      () => page.locator('#create-result').getAttribute('data-kind'),
      (k) => k === 'error',
    );
    await expectText('#create-result', /403 forbidden/);
    const { rows: unchanged } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM sales');
    expect(unchanged).toEqual(before);

    await page.locator('#admin-token').fill(ADMIN);
    await page.locator('#admin-token-form button').click();
    await expectText('#admin-who', /ops \(admin\)/);
    await form.locator('button[type="submit"]').click();
    await until(
      'the new sale',
      () => page.locator('#create-result').getAttribute('data-kind'),
      (k) => k === 'ok',
    );
    uiSaleId = (await page.locator('#create-result').getAttribute('data-sale-id')) ?? '';
    const view = await api('GET', `${servers[1]}/api/sales/${uiSaleId}`);
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      name: 'Limited vinyl',
      stock: 3,
      perUserLimit: 2,
      remaining: 3,
      status: 'active',
    });
    await until(
      'its card',
      () => card(uiSaleId),
      (c) => num(c.remaining) === 3 && c.status === 'active',
    );
  });

  it('reconciles from the UI: a check reports drift and changes nothing, a repair fixes Redis', async () => {
    const keys = saleKeys(saleId);
    const state = async () => ({
      stock: await redisClient.get(keys.stock),
      buyers: await redisClient.hgetall(keys.buyers),
      record: await recorded(saleId),
    });
    const result = page.locator('#reconcile-result');
    await page.locator('#reconcile-check').click();
    await expectText('#reconcile-result', /In sync: 2 sales checked/);

    // Redis "forgot" 5 sold units (as after a restart without persistence): it offers them again.
    await redisClient.set(keys.stock, 5);
    const before = await state();
    await page.locator('#reconcile-check').click();
    await expectText('#reconcile-result', /Drift in 1 of 2 sales\. Nothing was changed\./);
    expect(await result.getAttribute('data-kind')).toBe('warn');
    const row = page.locator(`#reconcile-table tr[data-sale="${saleId}"]`);
    expect(await row.locator('[data-field="remaining"]').textContent()).toBe('5');
    expect(await row.locator('[data-field="drift"]').textContent()).toBe('-5');
    expect(await state()).toEqual(before); // reconciliation without repair only reports
    // The dashboard shows the drift as Redis sees it: 5 units on offer again.
    await until(
      'the drift on the card',
      () => card(saleId),
      (c) => num(c.remaining) === 5 && c.status === 'active',
    );

    await page.locator('#reconcile-repair').click(); // arms
    expect(await redisClient.get(keys.stock)).toBe('5');
    await page.locator('#reconcile-repair').click();
    await expectText('#reconcile-result', /Repaired: 2 sales checked, 1 had drift\./);
    expect(await row.locator('[data-field="repaired"]').textContent()).toBe('0');
    expect(await redisClient.get(keys.stock)).toBe('0');
    await until(
      'the repaired card',
      () => card(saleId),
      (c) => num(c.remaining) === 0 && c.status === 'sold_out',
    );
    await page.locator('#reconcile-check').click();
    await expectText('#reconcile-result', /In sync: 2 sales checked/);
  });

  it('lets a demo buyer feel the limit and the sold-out answer', async () => {
    await page.locator('#demo-sale').selectOption(uiSaleId);
    const answers: string[] = [];
    const press = async (button: '#demo-new' | '#demo-buy-button') => {
      const count = await page.locator('#demo-log li').count();
      await page.locator(button).click();
      await until(
        'an answer in the log',
        () => page.locator('#demo-log li').count(),
        (n) => n > count,
      );
      const code = (await page.locator('#demo-log li').first().getAttribute('data-code')) ?? '';
      answers.push(code);
      return code;
    };
    await press('#demo-new');
    const first = (await page.locator('#demo-user').textContent()) ?? '';
    expect(first).toMatch(/^demo-[0-9a-f]{12}$/);
    await press('#demo-buy-button');
    await press('#demo-buy-button');
    await press('#demo-buy-button'); // a third unit: over the limit of 2
    await press('#demo-new');
    const second = (await page.locator('#demo-user').textContent()) ?? '';
    await press('#demo-buy-button'); // the last unit
    await press('#demo-new');
    await press('#demo-buy-button'); // nothing left
    expect(answers).toEqual([
      'buyer',
      'reserved',
      'reserved',
      'limit_reached',
      'buyer',
      'reserved',
      'buyer',
      'sold_out',
    ]);
    await expectText('#demo-log li:first-child', /409 sold_out: The sale is sold out\./);

    // The record agrees: three units, two of them for the first demo buyer.
    await until(
      'the demo orders recorded',
      () => recorded(uiSaleId),
      (r) => r.confirmed === 3,
    );
    const { rows } = await db.query<{ user_id: string; quantity: number }>(
      'SELECT user_id, quantity FROM purchases WHERE sale_id = $1 ORDER BY quantity DESC',
      [uiSaleId],
    );
    expect(rows).toEqual([
      { user_id: first, quantity: 2 },
      { user_id: second, quantity: 1 },
    ]);
    expect((await api('GET', `${servers[0]}/api/sales/${uiSaleId}`)).body).toMatchObject({
      remaining: 0,
      status: 'sold_out',
    });
    await until(
      'the demo sale on its card',
      () => card(uiSaleId),
      (c) =>
        c.status === 'sold_out' &&
        num(c.recorded) === 3 &&
        num(c.reserved) === 3 &&
        num(c.limit) === 1 &&
        num(c.soldOut) === 1,
    );
    expect(pageProblems).toEqual([]);

    const screenshot =
      process.env.LOCKSTOCK_UPDATE_SCREENSHOT === '1' ? README_SCREENSHOT : join(tmp, 'dashboard.png');
    mkdirSync(join(screenshot, '..'), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
    const png = readFileSync(screenshot);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBeGreaterThan(50_000);
  });

  it('after cancellations, the Reserved tile and the legend agree, and a reload on the other process shows the sale so far', async () => {
    const created = await api('POST', `${servers[0]}/api/sales`, ADMIN, {
      name: 'Restock after cancellations',
      stock: 40,
      perUserLimit: 1,
    });
    const id = String(created.body.id);
    await until(
      'its card',
      () => card(id),
      (c) => num(c.remaining) === 40,
    );
    // Three waves a little apart (the history draws them), through both processes; then a third of
    // the buyers cancel and their units come back.
    const bought: Array<{ user: string; orderId: string }> = [];
    for (let wave = 0; wave < 3; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => `c${wave}-${i}`).map(async (user, i) => ({
          user,
          answer: await buy(servers[i % 2] as string, id, user),
        })),
      );
      for (const { user, answer } of answers) {
        expect(answer.status).toBe(202);
        bought.push({ user, orderId: String(answer.body.orderId) });
      }
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
    const cancelled = bought.filter((_, i) => i % 3 === 0);
    for (const { user, orderId } of cancelled) {
      const answer = await api('POST', `${servers[1]}/api/orders/${orderId}/cancel`, signToken(SECRET, user));
      expect(answer.status).toBe(200);
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const reserved = bought.length; // 24 orders of one unit
    const returned = cancelled.length; // 8
    const shown = await until(
      'the card after the cancellations',
      () => card(id),
      (c) => num(c.returned) === returned && num(c.reserved) === reserved && num(c.recorded) === 16,
    );
    // The tile and the legend under the charts count the same thing (orders answered 'reserved',
    // cancelled ones included); Held is what is left of them in units, Returned what came back.
    expect(num(shown.reservedTile)).toBe(num(shown.reserved));
    expect(num(shown.reservedTile)).toBe(reserved);
    expect(num(shown.sold)).toBe(reserved - returned);
    expect(num(shown.reservedTile)).toBe(num(shown.sold) + num(shown.returned));
    expect(shown.returnedDetail).toBe('cancelled'); // none expired
    const view = await api('GET', `${servers[0]}/api/sales/${id}`);
    expect(num(shown.sold)).toBe(view.body.sold);
    const { rows } = await db.query<{ units: number }>(
      `SELECT coalesce(sum(quantity), 0)::int AS units FROM orders WHERE sale_id = $1 AND status = 'cancelled'`,
      [id],
    );
    expect(rows[0]?.units).toBe(returned);

    // A reload on the other process: the charts start from the shared history, not from now.
    const before = num(shown.stockPoints);
    expect(before).toBeGreaterThan(5);
    await page.goto(`${servers[1]}/`);
    const reloaded = await until(
      'the reloaded card with its history',
      () => card(id),
      (c) => num(c.stockPoints) >= before - 1 && num(c.returned) === returned,
    );
    expect(num(reloaded.reservedTile)).toBe(num(reloaded.reserved));
    expect(await pixelsOf(id, 'stock', [96, 165, 250])).toBeGreaterThan(50); // stock left
    expect(await pixelsOf(id, 'stock', [251, 191, 36])).toBeGreaterThan(20); // units returned
    expect(pageProblems).toEqual([]);

    const screenshot =
      process.env.LOCKSTOCK_UPDATE_SCREENSHOT === '1'
        ? RELOAD_SCREENSHOT
        : join(tmp, 'dashboard-after-reload.png');
    mkdirSync(join(screenshot, '..'), { recursive: true });
    await page.screenshot({ path: screenshot });
    expect(readFileSync(screenshot).subarray(1, 4).toString()).toBe('PNG');
  }, 120_000);
});

async function expectText(selector: string, pattern: RegExp): Promise<void> {
  await until(
    `${selector} to read ${pattern}`,
    async () => (await page.locator(selector).textContent()) ?? '',
    (t) => pattern.test(t),
  );
}
