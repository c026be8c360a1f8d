import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inRunOrder, measureInTurn } from '../../src/bench/sale/order.js';
import { summarise } from '../../src/bench/sale/rows.js';
import type { SaleBenchResult } from '../../src/bench/sale/run.js';
import { runCli } from '../helpers/cli.js';
import { longTier } from '../helpers/tier.js';

const dir = mkdtempSync(join(tmpdir(), 'lockstock-bench-sale-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A smoke test of the benchmark's wiring (wrk, the servers, the scenarios), not of anyone's speed.
// Its thirteen rows take over a minute: the long tier (npm run test:long). bench --profile, --shards
// and --raffle (test/bench, test/cli/bench-shards.test.ts) keep wrk and the servers in npm test.
describe('bench sale', () => {
  it.runIf(longTier)(
    'measures every path with wrk and gets the answers each scenario expects',
    async () => {
      const json = join(dir, 'sale.json');
      const { code, stdout, stderr } = await runCli([
        'bench',
        'sale',
        '--runs',
        '1',
        '--duration',
        '1',
        '--orders',
        '2000',
        '--serve-processes',
        '2',
        '--json',
        json,
      ]);
      expect(code, stderr).toBe(0);
      expect(stdout).toMatch(/^machine: .+ cores/);
      const report = JSON.parse(readFileSync(json, 'utf8')) as {
        results: SaleBenchResult[];
        warnings: string[];
        conditions: { cores: number };
      };
      // Whether the machine was busy, or the runs disagreed: a list, printed as WARNING lines too.
      expect(Array.isArray(report.warnings)).toBe(true);
      expect(report.conditions.cores).toBeGreaterThan(0);
      for (const warning of report.warnings) expect(stdout).toContain(`WARNING: ${warning}`);
      expect(report.results.map((r) => r.path)).toEqual([
        'reservation script',
        'purchases, serve --workers 0',
        'purchases, serve --workers 0, vs hello world',
        'sold-out answers, serve --workers 0',
        'purchases, serve --workers 0, rate limits on vs off',
        'purchases, serve --workers 0, tracing on vs off',
        'purchases, serve --workers 0, tracing every purchase vs off',
        'purchases, embedded default',
        'sold-out answers, embedded default',
        'purchases, embedded default, durability fsync vs memory',
        'purchases, serve --workers 0 --processes 2 vs 1',
        'purchases per HTTP process, serve --workers 0 --processes 2',
        'pipeline into PostgreSQL',
      ]);
      // The purchase is measured against the minimal hand-written endpoint (issue 28's reference).
      const purchases = report.results.find((r) => r.path === 'purchases, serve --workers 0');
      expect(purchases?.baseline).toMatch(/^minimal hand-written endpoint/);
      expect(purchases?.target).toBe(1);
      // The traced serve exported spans to the benchmark's sink (the row is about tracing on).
      const traced = report.results.find((r) => r.path === 'purchases, serve --workers 0, tracing on vs off');
      expect(traced?.spansExported).toBeGreaterThan(0);
      for (const result of report.results) {
        expect([result.path, result.opsPerSec > 0, result.baselineOpsPerSec > 0]).toEqual([
          result.path,
          true,
          true,
        ]);
        expect([result.path, result.runRatios.length]).toEqual([result.path, 1]);
        // Every purchase answered 202 and every attempt on the sold-out sale 409: nothing else.
        if (result.unexpected !== undefined)
          expect([result.path, result.unexpected]).toEqual([result.path, 0]);
      }
    },
    240_000,
  );

  it('measures lockstock and its baseline in turns: who goes first alternates from run to run', async () => {
    for (const run of [0, 1, 2, 3]) {
      const order: string[] = [];
      const measured = await measureInTurn(
        {
          library: async () => order.push('library'),
          baseline: async () => order.push('baseline'),
        },
        run,
      );
      expect(order).toEqual(run % 2 === 0 ? ['library', 'baseline'] : ['baseline', 'library']);
      expect(measured).toEqual({
        library: order.indexOf('library') + 1,
        baseline: order.indexOf('baseline') + 1,
      });
    }
    // The HTTP path's four servers: every pair (each row compares two of them) swaps from run to run.
    const servers = ['hello', 'serve', 'embedded', 'embeddedMemory'];
    const [first, second] = [inRunOrder(servers, 0), inRunOrder(servers, 1)];
    for (const a of servers)
      for (const b of servers)
        if (a !== b)
          expect([a, b, first.indexOf(a) < first.indexOf(b)]).toEqual([
            a,
            b,
            second.indexOf(a) > second.indexOf(b),
          ]);
  });

  it("reports each row's ratio as the median of its runs' ratios, not the ratio of the medians", () => {
    // Three runs of a noisy machine: the sides' medians come from different runs (2,000 and 1,000:
    // 2×), while lockstock was ahead of its baseline by 1.2× in two runs of three.
    const [row] = summarise(
      [
        { library: 2_400, baseline: 2_000 },
        { library: 2_000, baseline: 1_000 },
        { library: 600, baseline: 500 },
      ],
      [],
      [],
      0,
      1,
    );
    expect(row?.runRatios).toEqual([1.2, 2, 1.2]);
    expect(row?.ratio).toBe(1.2);
    expect([row?.opsPerSec, row?.baselineOpsPerSec]).toEqual([2_000, 1_000]);
  });
});
