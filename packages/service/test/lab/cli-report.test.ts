import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { spawnCli } from '../helpers/cli.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lockstock-lab-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('lockstock lab (CLI)', () => {
  it('prints a table, writes the JSON the README documents and an HTML report whose charts render', async () => {
    const json = join(dir, 'lab.json');
    const html = join(dir, 'lab.html');
    // Two lock-based sales (their own charts) and a MySQL remedy (the lab starts a mariadbd for it).
    const strategies = [
      'naive-redis',
      'sql-atomic',
      'redis-lua',
      'redis-lock',
      'postgres-advisory-lock',
      'mysql-atomic',
    ];
    const cli = spawnCli([
      'lab',
      '--strategies',
      strategies.join(','),
      '--stock',
      '10',
      '--buyers',
      '40',
      '--processes',
      '2',
      '--runs',
      '2',
      '--json',
      json,
      '--html',
      html,
    ]);
    const [code] = (await cli.exited) as [number | null];
    expect(code, cli.output()).toBe(0);
    expect(cli.output()).toMatch(/\| redis-lua \| correct \| yes \| 0 \(0\/2\)/);

    const report = JSON.parse(readFileSync(json, 'utf8'));
    expect(report.runs).toHaveLength(strategies.length * 2);
    for (const run of report.runs) {
      expect(Object.keys(run)).toEqual(
        expect.arrayContaining([
          'strategy',
          'stock',
          'buyers',
          'processes',
          'sold',
          'oversold',
          'duplicateBuyers',
          'finalStock',
          'throughputPerSec',
          'latencyMs',
          'errors',
        ]),
      );
      expect(run).toMatchObject({ stock: 10, buyers: 40, processes: 2 });
      expect(run.oversold).toBe(Math.max(0, run.sold - run.stock));
    }

    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(pathToFileURL(html).href);
      for (const id of [
        'chart-oversold',
        'chart-throughput',
        'chart-latency',
        'chart-locks',
        'chart-locks-latency',
      ]) {
        const chart = page.locator(`#${id} svg`);
        const box = await chart.boundingBox();
        expect(box?.width, id).toBeGreaterThan(100);
        expect(box?.height, id).toBeGreaterThan(50);
        // One row per strategy (per lock-based one in the lock charts); every strategy sold
        // something, so throughput bars have width.
        const rows = id.startsWith('chart-locks') ? 2 : strategies.length;
        expect(await page.locator(`#${id} .bar`).count(), id).toBeGreaterThanOrEqual(rows);
      }
      expect(await page.locator('#chart-locks text').allTextContents()).toEqual(
        expect.arrayContaining(['Redis', 'PostgreSQL']),
      );
      const throughputWidths = await page
        .locator('#chart-throughput .bar')
        .evaluateAll((bars) =>
          bars.map((bar) => (bar as unknown as { getBBox(): { width: number } }).getBBox().width),
        );
      expect(throughputWidths.every((w) => w > 0)).toBe(true);
      expect(await page.locator('section.strategy').count()).toBe(strategies.length);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('refuses bad options with a clear message before starting anything', async () => {
    for (const [args, message] of [
      [['--strategies', 'naive-redis,nope'], /unknown: nope/],
      [['--set', 'nope.retries=1'], /unknown strategy "nope"/],
      [['--set', 'sql-optimistic'], /expected <strategy>\.<knob>=<value>/],
      [['--buyers', '0'], /expected an integer from 1/],
    ] as const) {
      const cli = spawnCli(['lab', ...args]);
      const [code] = (await cli.exited) as [number | null];
      expect(code).not.toBe(0);
      // All of it: commander prints the usage after the error, longer than output()'s last lines.
      expect(cli.allLines().join('\n')).toMatch(message);
    }
  });
});
