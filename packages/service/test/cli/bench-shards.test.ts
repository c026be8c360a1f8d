import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ShardsReport } from '../../src/bench/sale/shards.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'lockstock-bench-shards-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The wiring of `bench sale --shards` (Clusters, load processes, INFO CPU), not anyone's speed; the
// spread of a split sale's work over its masters is the design's, so it is asserted.
describe('bench sale --shards', () => {
  it("splits one hot sale over 1 and 2 masters: every reservation made, each master's share within 1.25/K", async () => {
    const json = join(dir, 'shards.json');
    const { code, stdout, stderr } = await runCli([
      'bench',
      'sale',
      '--shards',
      '1,2',
      '--runs',
      '1',
      '--duration',
      '1',
      '--processes',
      '1',
      '--loops',
      '16',
      '--json',
      json,
    ]);
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^machine: .+ cores/);
    expect(stdout).toMatch(/Redis CPU µs \/ reservation/);
    const report = JSON.parse(readFileSync(json, 'utf8')) as ShardsReport;
    expect(report.results.map((r) => [r.shards, r.masterShares.length, r.refused, r.errors])).toEqual([
      [1, 1, 0, 0],
      [2, 2, 0, 0],
    ]);
    for (const result of report.results) {
      expect(result.reservationsPerSec).toBeGreaterThan(0);
      expect(result.cpuPerReservationUs).toBeGreaterThan(0);
      expect(result.balanced).toBe(true);
      expect(result.masterShares.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 1);
    }
  }, 120_000);
});
