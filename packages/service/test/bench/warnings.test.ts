import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  conditionsBetween,
  machineWarnings,
  parseProcStat,
  ratioSpread,
  spreadWarnings,
  watchMachine,
  type MachineReading,
} from '../../src/bench/conditions.js';
import type { LockBenchResult } from '../../src/bench/locks/run.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'lockstock-bench-warnings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A machine reading: load average, cores, and /proc/stat's steal and total ticks. */
const reading = (loadAverage: number, cores: number, steal = 0, total = 0): MachineReading => ({
  loadAverage,
  cores,
  cpuTimes: { steal, total },
});

describe('bench warnings (the logic, on injected readings)', () => {
  it('parses /proc/stat: steal is the 8th field, the total the first 8', () => {
    const stat = 'cpu  100 5 50 800 10 2 3 30 7 0\ncpu0 50 2 25 400 5 1 1 15 0 0\nintr 1\n';
    expect(parseProcStat(stat)).toEqual({ steal: 30, total: 1000 });
    expect(parseProcStat('intr 1\n')).toBeNull();
  });

  it('a quiet machine: no warning', () => {
    const c = conditionsBetween(reading(0.5, 2, 0, 10_000), reading(1.2, 2, 100, 20_000));
    expect(c).toEqual({
      start: { loadAverage: 0.5, loadPerCore: 0.25 },
      end: { loadAverage: 1.2, loadPerCore: 0.6 },
      cores: 2,
      stealPercent: 1,
    });
    expect(machineWarnings(c)).toEqual([]);
  });

  it('busy at the start, at the end, or its CPU stolen: one warning each', () => {
    const busyStart = conditionsBetween(reading(8, 2), reading(1, 2));
    expect(machineWarnings(busyStart)).toEqual([
      expect.stringMatching(/busy at the start: load average 8 on 2 cores \(4 per core/),
    ]);
    const busyEnd = conditionsBetween(reading(1, 4), reading(3.2, 4));
    expect(machineWarnings(busyEnd)).toEqual([
      expect.stringMatching(/busy at the end: load average 3.2 on 4 cores \(0.8 per core/),
    ]);
    const stolen = conditionsBetween(reading(0, 2, 1_000, 100_000), reading(0, 2, 1_600, 110_000));
    expect(stolen.stealPercent).toBe(6);
    expect(machineWarnings(stolen)).toEqual([expect.stringMatching(/hypervisor took 6% of the CPU time/)]);
    expect(machineWarnings(conditionsBetween(reading(9, 2, 0, 0), reading(9, 2, 900, 1000)))).toHaveLength(3);
  });

  it('no /proc/stat (not Linux): no steal figure, no steal warning', () => {
    const none = { loadAverage: 0, cores: 2, cpuTimes: null };
    expect(conditionsBetween(none, none).stealPercent).toBeNull();
    expect(machineWarnings(conditionsBetween(none, none))).toEqual([]);
  });

  it('runs that disagree: the spread of their ratios over the median above 25%', () => {
    // The case: 0.16× on a cold first run, 1.79× on the rerun.
    expect(ratioSpread([0.16, 1.79])).toBeGreaterThan(1);
    expect(ratioSpread([1.0, 1.1, 1.2])).toBeCloseTo(0.2 / 1.1);
    expect(ratioSpread([2])).toBe(0);
    expect(ratioSpread([])).toBe(0);
    const warnings = spreadWarnings([
      { label: 'uncontended mutex/single', ratios: [0.16, 1.79] },
      { label: 'contended mutex/single', ratios: [1.0, 1.1, 1.2] },
    ]);
    expect(warnings).toEqual([
      expect.stringMatching(/^runs disagree on uncontended mutex\/single: 0.16×, 1.79×/),
    ]);
  });

  it('watchMachine reads at the start and at finish, and joins both kinds of warning', () => {
    const readings = [reading(0.2, 2, 0, 1000), reading(5, 2, 0, 2000)];
    const watch = watchMachine(() => readings.shift() as MachineReading);
    const { conditions, warnings } = watch.finish([{ label: 'row', ratios: [1, 2] }]);
    expect(conditions.end.loadPerCore).toBe(2.5);
    expect(warnings).toEqual([
      expect.stringMatching(/busy at the end/),
      expect.stringMatching(/^runs disagree on row/),
    ]);
  });
});

describe('bench locks reports its warnings', () => {
  it('its JSON carries warnings, the conditions and each run’s ratio; a warning is printed as WARNING', async () => {
    const json = join(dir, 'locks.json');
    // The smallest bench: one row pair on one Redis, two short runs (and the warm-up round).
    const { code, stdout, stderr } = await runCli([
      'bench',
      'locks',
      '--topologies',
      'single',
      '--kinds',
      'mutex',
      '--scenarios',
      'uncontended',
      '--libraries',
      'lockstock,redis-semaphore',
      '--runs',
      '2',
      '--uncontended-ms',
      '150',
      '--json',
      json,
    ]);
    expect(code, stderr).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as {
      warnings: string[];
      conditions: { start: { loadPerCore: number }; end: { loadPerCore: number }; cores: number };
      results: LockBenchResult[];
    };
    expect(Array.isArray(report.warnings)).toBe(true);
    expect(report.conditions.cores).toBeGreaterThan(0);
    expect(report.conditions.start.loadPerCore).toBeGreaterThanOrEqual(0);
    const lockstock = report.results.find((r) => r.library === 'lockstock');
    expect(lockstock?.runs).toBe(2); // the warm-up round is not counted
    expect(lockstock?.timesBestPeerByRun).toHaveLength(2);
    // The printed report says what the JSON says (a loaded test machine usually warns).
    for (const warning of report.warnings) expect(stdout).toContain(`WARNING: ${warning}`);
    expect(stderr).toMatch(/warm-up/);
  }, 180_000);
});
