import { mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { launchChromium, until } from '../helpers/browser.js';
import { useSaleStack } from '../helpers/sale.js';

/** `LOCKSTOCK_UPDATE_SCREENSHOT=1` refreshes the README's screenshot; otherwise it goes to a temp dir. */
const README_SCREENSHOT = fileURLToPath(new URL('../../../../docs/api-reference.png', import.meta.url));

const env = useSaleStack();
let app: FastifyInstance;
let address: string;
let browser: Browser;
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'lockstock-docs-'));
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config: { jwtSecret: 'docs-page-secret-0123456789', rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  address = await app.listen({ port: 0, host: '127.0.0.1' });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('the API reference page', () => {
  it('GET /docs renders every route in Chromium from assets the server itself serves', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    const response = await page.goto(`${address}/docs`);
    expect(response?.status()).toBe(200);
    // Swagger UI builds the list from /docs/json: wait until the purchase route is on the page.
    const paths = await until(
      'the operations to render',
      () => page.locator('.opblock-summary-path').allTextContents(),
      (texts) => texts.some((t) => t.includes('/api/sales/{id}/orders')),
    );
    const documented = Object.keys(
      ((await app.inject({ url: '/docs/json' })).json() as { paths: object }).paths,
    );
    for (const path of documented) {
      expect(
        paths.map((p) => p.replace(/\u200b/g, '')),
        path,
      ).toContain(path);
    }
    // No CDN: every request the page made went to this server.
    expect(requested.length).toBeGreaterThan(2);
    expect(requested.filter((url) => !url.startsWith(`${address}/`))).toEqual([]);
    expect(problems).toEqual([]);

    const screenshot =
      process.env.LOCKSTOCK_UPDATE_SCREENSHOT === '1' ? README_SCREENSHOT : join(tmp, 'api-reference.png');
    mkdirSync(join(screenshot, '..'), { recursive: true });
    await page.screenshot({ path: screenshot });
    expect(readFileSync(screenshot).subarray(1, 4).toString()).toBe('PNG');
    await page.close();
  });
});
