import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@lockstock/servers';
import { launchChromium, until } from '../helpers/browser.js';
import { spawnCli, type CliProcess } from '../helpers/cli.js';

/** `LOCKSTOCK_UPDATE_SCREENSHOT=1` refreshes the README's screenshot; otherwise it goes to a temp dir. */
const README_SCREENSHOT = fileURLToPath(new URL('../../../../docs/dashboard-signed-in.png', import.meta.url));

let cwd: string;
let serve: CliProcess;
let browser: Browser;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'lockstock-signed-in-'));
  serve = spawnCli(['serve'], { PORT: String(await freePort()) }, { cwd });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  serve?.kill('SIGINT');
  await serve?.exited;
  rmSync(cwd, { recursive: true, force: true });
});

describe('the dashboard link `npm start` prints', () => {
  it('opens the dashboard signed in as admin on loopback, the token only in the fragment', async () => {
    const line = await serve.waitForLine(/^Dashboard, signed in as admin: /);
    const link = line.slice(line.indexOf('http'));
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#admin=ey/);
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const sent: string[] = [];
    page.on('request', (request) => sent.push(request.url()));
    await page.goto(link);
    await until(
      'the admin panel to be signed in',
      () => page.locator('#admin-who').textContent(),
      (text) => /Signed in as demo-admin \(admin\)/.test(text ?? ''),
    );
    expect(new URL(page.url()).hash).toBe(''); // gone from the address bar
    expect(
      sent.some((url) => url.includes('admin=') || url.includes(link.split('#admin=')[1] as string)),
    ).toBe(false); // never in a request (fragments are not sent)
    const screenshot =
      process.env.LOCKSTOCK_UPDATE_SCREENSHOT === '1'
        ? README_SCREENSHOT
        : join(cwd, 'dashboard-signed-in.png');
    mkdirSync(join(screenshot, '..'), { recursive: true });
    await page.locator('#admin-who').scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshot });
    expect(readFileSync(screenshot).subarray(1, 4).toString()).toBe('PNG');
    await page.close();
  });
});
