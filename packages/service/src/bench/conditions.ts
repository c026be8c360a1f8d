import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { median, round } from './stats.js';

/**
 * How busy the machine was around a benchmark, and the warnings that follow from it: on a shared or
 * loaded machine one run's ratio can be several times another's (lockstock at 0.16× the best peer on
 * a cold first row, 1.79× on the rerun), and a table printed without a word about it misleads.
 */

/** The kernel's CPU counters (/proc/stat's first line), in ticks; null where there is none. */
export interface CpuTimes {
  steal: number;
  total: number;
}

export interface MachineReading {
  /** 1-minute load average. */
  loadAverage: number;
  cores: number;
  cpuTimes: CpuTimes | null;
}

/** The machine at the start and at the end of a benchmark (the JSON's `conditions`). */
export interface BenchConditions {
  start: { loadAverage: number; loadPerCore: number };
  end: { loadAverage: number; loadPerCore: number };
  cores: number;
  /** Share of the CPU time stolen by the hypervisor between start and end, %; null: not measured. */
  stealPercent: number | null;
}

export const WARN_AT = {
  /** 1-minute load average per core, at the start or the end. */
  loadPerCore: 0.7,
  /** CPU steal over the benchmark, % of all CPU time. */
  stealPercent: 3,
  /** (max − min) / median of a row's per-run ratios. */
  ratioSpread: 0.25,
} as const;

/** Parses /proc/stat's aggregate `cpu` line: user nice system idle iowait irq softirq steal … */
export function parseProcStat(text: string): CpuTimes | null {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) return null;
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return null;
  // guest and guest_nice (fields 9 and 10) are already counted in user and nice.
  const total = fields.slice(0, 8).reduce((sum, n) => sum + n, 0);
  return { steal: fields[7] as number, total };
}

export function readMachine(): MachineReading {
  let cpuTimes: CpuTimes | null = null;
  try {
    cpuTimes = parseProcStat(readFileSync('/proc/stat', 'utf8'));
  } catch {
    // Not Linux: no steal figure.
  }
  return { loadAverage: loadavg()[0] ?? 0, cores: availableParallelism(), cpuTimes };
}

export function conditionsBetween(start: MachineReading, end: MachineReading): BenchConditions {
  const cores = Math.max(1, start.cores);
  const at = (r: MachineReading) => ({
    loadAverage: round(r.loadAverage),
    loadPerCore: round(r.loadAverage / cores),
  });
  let stealPercent: number | null = null;
  if (start.cpuTimes && end.cpuTimes) {
    const total = end.cpuTimes.total - start.cpuTimes.total;
    if (total > 0) stealPercent = round((100 * (end.cpuTimes.steal - start.cpuTimes.steal)) / total, 1);
  }
  return { start: at(start), end: at(end), cores, stealPercent };
}

/** Warnings about the machine: busy at the start or the end, or its CPU stolen by the hypervisor. */
export function machineWarnings(c: BenchConditions, limits = WARN_AT): string[] {
  const warnings: string[] = [];
  for (const [when, at] of [
    ['start', c.start],
    ['end', c.end],
  ] as const) {
    if (at.loadPerCore > limits.loadPerCore) {
      warnings.push(
        `the machine was busy at the ${when}: load average ${at.loadAverage} on ${c.cores} cores ` +
          `(${at.loadPerCore} per core, above ${limits.loadPerCore}); figures from a loaded machine vary from run to run`,
      );
    }
  }
  if (c.stealPercent !== null && c.stealPercent > limits.stealPercent) {
    warnings.push(
      `the hypervisor took ${c.stealPercent}% of the CPU time during the run (steal, above ${limits.stealPercent}%): other virtual machines competed for the cores`,
    );
  }
  return warnings;
}

/** A row's ratio in each run, e.g. lockstock over the best peer of that run. */
export interface RunRatios {
  label: string;
  ratios: readonly number[];
}

/** (max − min) / median of the ratios; 0 with fewer than two. */
export function ratioSpread(ratios: readonly number[]): number {
  const finite = ratios.filter((r) => Number.isFinite(r) && r > 0);
  if (finite.length < 2) return 0;
  const mid = median(finite);
  return mid > 0 ? (Math.max(...finite) - Math.min(...finite)) / mid : 0;
}

/** Warnings for rows whose runs disagree: the spread of their ratios above the limit. */
export function spreadWarnings(rows: readonly RunRatios[], limit: number = WARN_AT.ratioSpread): string[] {
  return rows.flatMap(({ label, ratios }) => {
    const spread = ratioSpread(ratios);
    if (spread <= limit) return [];
    return [
      `runs disagree on ${label}: ${ratios.map((r) => `${round(r)}×`).join(', ')} ` +
        `(spread ${Math.round(spread * 100)}% of the median, above ${Math.round(limit * 100)}%); rerun on a quieter machine or with more --runs`,
    ];
  });
}

/** Reads the machine at the start; `finish()` reads it again and returns conditions and warnings. */
export function watchMachine(read: () => MachineReading = readMachine) {
  const start = read();
  return {
    finish(rows: readonly RunRatios[] = []): { conditions: BenchConditions; warnings: string[] } {
      const conditions = conditionsBetween(start, read());
      return { conditions, warnings: [...machineWarnings(conditions), ...spreadWarnings(rows)] };
    },
  };
}
