import type { Attempt } from './types.js';

export interface RunResult {
  strategy: string;
  stock: number;
  buyers: number;
  processes: number;
  /** Orders recorded (rows / entries), whatever the strategy believed. */
  sold: number;
  /** Units recorded beyond the stock. */
  oversold: number;
  /** Buyers with more than one recorded order. */
  duplicateBuyers: number;
  finalStock: number;
  /** Stock left unsold although more buyers than units tried. */
  unsold: number;
  /**
   * Buyers told "sold out" (no unit, no error) while units were left: units remained at the end, or
   * the record holds a sale made after their answer (stock never comes back in the lab).
   */
  falseSoldOut: number;
  /** Attempts the strategy reported as sold (to compare with what was recorded). */
  believedSold: number;
  throughputPerSec: number;
  latencyMs: { p50: number; p99: number };
  errors: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

/**
 * Derives a run's outcome from the record (orders, final stock) and the attempts' timings — never
 * from what the strategy believes (that is reported alongside, as believedSold).
 */
export function checkRun(input: {
  strategy: string;
  stock: number;
  processes: number;
  attempts: Attempt[];
  orders: string[];
  finalStock: number;
  soldAtMs?: number[];
  wallMs: number;
}): RunResult {
  const { attempts, orders, stock } = input;
  const perBuyer = new Map<string, number>();
  for (const buyer of orders) perBuyer.set(buyer, (perBuyer.get(buyer) ?? 0) + 1);
  const latencies = attempts.map((a) => a.ms).sort((a, b) => a - b);
  const sold = orders.length;
  return {
    strategy: input.strategy,
    stock,
    buyers: attempts.length,
    processes: input.processes,
    sold,
    oversold: Math.max(0, sold - stock),
    duplicateBuyers: [...perBuyer.values()].filter((n) => n > 1).length,
    finalStock: input.finalStock,
    unsold: attempts.length > stock ? Math.max(0, stock - sold) : 0,
    falseSoldOut: falseSoldOuts(attempts, input.finalStock, input.soldAtMs),
    believedSold: attempts.filter((a) => a.believedSold).length,
    throughputPerSec: input.wallMs > 0 ? Math.round((attempts.length * 1000) / input.wallMs) : 0,
    latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
    errors: attempts.filter((a) => a.error !== undefined).length,
  };
}

const round = (n: number) => Math.round(n * 100) / 100;

function falseSoldOuts(attempts: readonly Attempt[], finalStock: number, soldAtMs: readonly number[] = []) {
  const refused = attempts.filter((a) => !a.believedSold && a.error === undefined);
  if (finalStock > 0) return refused.length;
  const lastSale = soldAtMs.reduce((max, ms) => Math.max(max, ms), Number.NEGATIVE_INFINITY);
  return refused.filter((a) => a.atMs !== undefined && a.atMs < lastSale).length;
}
