import { readFileSync } from 'node:fs';
import { arch, cpus, loadavg, release, type } from 'node:os';

/**
 * When, with what and on what a lab ran: the JSON's `meta` and the HTML report's header, so that a
 * report read weeks later still says which lockstock, which Node and how busy the machine was.
 */
export interface LabMeta {
  /** When the lab started, ISO 8601 (UTC). */
  date: string;
  /** The version `lockstock --version` prints. */
  lockstockVersion: string;
  /** process.version, e.g. "v20.20.2". */
  node: string;
  /** e.g. "Linux 6.1.0-28-amd64 (x64)". */
  os: string;
  cpu: { model: string; count: number };
  /** 1, 5 and 15-minute load averages when the lab started (all 0 where the OS has none). */
  loadAverageAtStart: [number, number, number];
  /** The command and the parameters it ran with (defaults included). */
  command: string;
  parameters: Record<string, unknown>;
}

/** The version of the `lockstock` CLI (@lockstock/service's package.json, from src/ or dist/). */
export function lockstockVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** Reads the machine now: call it when the lab starts. */
export function labMeta(parameters: Record<string, unknown>, now = new Date()): LabMeta {
  const cores = cpus();
  const [one = 0, five = 0, fifteen = 0] = loadavg();
  return {
    date: now.toISOString(),
    lockstockVersion: lockstockVersion(),
    node: process.version,
    os: `${type()} ${release()} (${arch()})`,
    cpu: { model: cores[0]?.model.trim() || 'unknown', count: cores.length },
    loadAverageAtStart: [round2(one), round2(five), round2(fifteen)],
    command: 'lockstock lab',
    parameters,
  };
}

/** The meta in one sentence (the HTML report's header). */
export function describeMeta(meta: LabMeta): string {
  const [one, five, fifteen] = meta.loadAverageAtStart;
  return (
    `Run on ${meta.date.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')} with lockstock ${meta.lockstockVersion}, ` +
    `Node ${meta.node}, ${meta.os}, ${meta.cpu.count} × ${meta.cpu.model}; ` +
    `load average ${one} / ${five} / ${fifteen} (1 / 5 / 15 min) at the start.`
  );
}
