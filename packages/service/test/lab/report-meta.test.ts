import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/lab/checker.js';
import { renderHtmlReport } from '../../src/lab/html.js';
import { describeMeta, labMeta, type LabMeta } from '../../src/lab/meta.js';
import { summarize } from '../../src/lab/report.js';
import { STRATEGIES } from '../../src/lab/strategies/index.js';
import { spawnCli } from '../helpers/cli.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lockstock-lab-meta-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const META_KEYS = [
  'date',
  'lockstockVersion',
  'node',
  'os',
  'cpu',
  'loadAverageAtStart',
  'command',
  'parameters',
];

function expectMeta(meta: LabMeta) {
  expect(Object.keys(meta)).toEqual(expect.arrayContaining(META_KEYS));
  expect(new Date(meta.date).toISOString()).toBe(meta.date);
  expect(meta.lockstockVersion).toBe(pkg.version);
  expect(meta.node).toBe(process.version);
  expect(meta.os.length).toBeGreaterThan(0);
  expect(meta.cpu.count).toBeGreaterThan(0);
  expect(meta.cpu.model.length).toBeGreaterThan(0);
  expect(meta.loadAverageAtStart).toHaveLength(3);
  for (const load of meta.loadAverageAtStart) expect(load).toBeGreaterThanOrEqual(0);
}

const run = (strategy: string): RunResult => ({
  strategy,
  stock: 5,
  buyers: 10,
  processes: 1,
  sold: 5,
  oversold: 0,
  duplicateBuyers: 0,
  finalStock: 0,
  unsold: 0,
  falseSoldOut: 0,
  believedSold: 5,
  throughputPerSec: 100,
  latencyMs: { p50: 1, p99: 2 },
  errors: 0,
});

describe('lab reports are dated and labelled', () => {
  it('meta: date, lockstock and Node versions, OS, CPU, load average, parameters; the HTML shows them', () => {
    const meta = labMeta({ strategies: ['redis-lua'], runs: 1 }, new Date('2026-11-28T09:30:00.000Z'));
    expectMeta(meta);
    expect(meta.command).toBe('lockstock lab');
    expect(describeMeta(meta)).toContain('2026-11-28 09:30:00 UTC');
    const results = [run('redis-lua'), run('naive-redis')];
    const settings = { stock: 5, buyers: 10, processes: 1, concurrency: 8 };
    const html = renderHtmlReport(summarize(results), results, settings, meta);
    expect(html).toContain('2026-11-28 09:30:00 UTC');
    expect(html).toContain('datetime="2026-11-28T09:30:00.000Z"');
    expect(html).toContain(`lockstock ${pkg.version}`);
    expect(html).toContain(`Node ${process.version}`);
    expect(html).toContain('strategies=[&quot;redis-lua&quot;], runs=1');
    // Its sources in words a reader knows; no internal names, no link to anything outside the page.
    expect(html).toMatch(/blog posts and tutorials/);
    expect(html).not.toMatch(/\bseeds?\b|DESIGN|[Ii]ssue \d/);
    expect(html).not.toMatch(/\s(?:href|src)="(?!#|data:)/);
  });

  it('no strategy cites internal material ("seed", an issue number) in what the report and --list show', () => {
    for (const s of STRATEGIES) {
      for (const text of [s.title, s.claim, s.note ?? '']) {
        expect(text, s.name).not.toMatch(/\bseeds?\b|\bDESIGN\b|\b[Ii]ssue \d/);
      }
    }
  });

  it('lockstock lab writes meta into its JSON and the date and version into its HTML', async () => {
    const json = join(dir, 'lab.json');
    const html = join(dir, 'lab.html');
    const before = Date.now();
    // The smallest lab: one cheap strategy, one process, one run.
    const cli = spawnCli(
      [
        'lab',
        '--strategies',
        'redis-lua',
        '--stock',
        '5',
        '--buyers',
        '10',
        '--processes',
        '1',
        '--concurrency',
        '2',
        '--runs',
        '1',
        '--json',
        json,
        '--html',
        html,
      ],
      { REDIS_URL: undefined, DATABASE_URL: undefined },
    );
    const [code] = (await cli.exited) as [number | null];
    expect(code, cli.output()).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as { meta: LabMeta; runs: RunResult[] };
    expectMeta(report.meta);
    expect(Date.parse(report.meta.date)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(report.meta.date)).toBeLessThanOrEqual(Date.now());
    expect(report.meta.parameters).toMatchObject({
      strategies: ['redis-lua'],
      runs: 1,
      stock: 5,
      buyers: 10,
      processes: 1,
      concurrency: 2,
      servers: { redis: 'private', database: 'private' },
    });
    // `runs` as documented, unchanged.
    expect(report.runs).toHaveLength(1);
    expect(report.runs[0]).toMatchObject({ strategy: 'redis-lua', stock: 5, buyers: 10, processes: 1 });
    const page = readFileSync(html, 'utf8');
    expect(page).toContain(report.meta.date);
    expect(page).toContain(`lockstock ${pkg.version}`);
  }, 180_000);
});
