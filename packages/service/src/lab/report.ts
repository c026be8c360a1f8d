import type { RunResult } from './checker.js';
import { renderTable, type TableData, type TableStyle } from '../support/table.js';
import { strategyByName } from './strategies/index.js';

/** Per strategy: runs summed (sold, oversold, errors...) and medians of the timings. */
export interface StrategySummary {
  strategy: string;
  title: string;
  claim: string;
  expectation: string;
  note?: string;
  /** The lock backend of a lock-based sale (Strategy.lockBackend). */
  lockBackend?: string;
  runs: number;
  runsOversold: number;
  oversold: number;
  duplicateBuyers: number;
  negativeStockRuns: number;
  minFinalStock: number;
  unsold: number;
  /** Buyers told "sold out" while units were left (all runs). */
  falseSoldOut: number;
  errors: number;
  throughputPerSec: number;
  p50: number;
  p99: number;
  /** Whether the runs showed what the posts and tutorials expect of the design (`expectation`). */
  asExpected: boolean;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : (sorted[Math.floor((sorted.length - 1) / 2)] as number);
};

export function summarize(results: RunResult[]): StrategySummary[] {
  const names = [...new Set(results.map((r) => r.strategy))];
  return names.map((name) => {
    const runs = results.filter((r) => r.strategy === name);
    const strategy = strategyByName(name);
    const summary = {
      strategy: name,
      title: strategy.title,
      claim: strategy.claim,
      expectation: strategy.expectation,
      ...(strategy.note ? { note: strategy.note } : {}),
      ...(strategy.lockBackend ? { lockBackend: strategy.lockBackend } : {}),
      runs: runs.length,
      runsOversold: runs.filter((r) => r.oversold > 0).length,
      oversold: runs.reduce((s, r) => s + r.oversold, 0),
      duplicateBuyers: runs.reduce((s, r) => s + r.duplicateBuyers, 0),
      negativeStockRuns: runs.filter((r) => r.finalStock < 0).length,
      minFinalStock: Math.min(...runs.map((r) => r.finalStock)),
      unsold: runs.reduce((s, r) => s + r.unsold, 0),
      falseSoldOut: runs.reduce((s, r) => s + r.falseSoldOut, 0),
      errors: runs.reduce((s, r) => s + r.errors, 0),
      throughputPerSec: median(runs.map((r) => r.throughputPerSec)),
      p50: median(runs.map((r) => r.latencyMs.p50)),
      p99: median(runs.map((r) => r.latencyMs.p99)),
    };
    return { ...summary, asExpected: matchesExpectation(summary, runs) };
  });
}

/**
 * Did the runs show what the posts and tutorials say of the design? "correct" means nothing oversold, duplicated,
 * left unsold or failed in any run and nobody told sold out while units were left (a counter below
 * zero alone is not an oversell: the record decides). A broken design matches when its failure
 * showed in at least one run.
 */
export function matchesExpectation(s: Omit<StrategySummary, 'asExpected'>, runs: RunResult[]): boolean {
  const clean =
    s.oversold === 0 && s.duplicateBuyers === 0 && s.unsold === 0 && s.errors === 0 && s.falseSoldOut === 0;
  switch (s.expectation) {
    case 'correct':
      return clean;
    case 'oversells':
      return s.oversold > 0 || s.duplicateBuyers > 0;
    case 'negative_stock':
      return s.negativeStockRuns > 0;
    case 'oversells_across_processes': {
      // One process: the local mutex is all the exclusion needed. Several: it guards nothing.
      const multi = runs.some((r) => r.processes > 1);
      return multi ? s.oversold > 0 : clean;
    }
    case 'stalls':
      return s.unsold > 0 && s.oversold === 0;
    case 'may_leave_unsold':
      // Never oversells; leaves stock unsold only when it gives up (bounded retries).
      return s.oversold === 0 && s.duplicateBuyers === 0;
    case 'sells_out_early_or_twice':
      // Which of the two a run shows depends on its buyers: with double clicks a buyer usually lands
      // on two segments before any runs dry (duplicates); with single presses the dry segments refuse.
      return s.falseSoldOut > 0 || s.unsold > 0 || s.duplicateBuyers > 0;
    default:
      return false;
  }
}

/** What a run showed, in one phrase (used by the table and the report). */
export function verdict(s: StrategySummary): string {
  const parts: string[] = [];
  if (s.oversold > 0) parts.push(`oversold ${s.oversold} units in ${s.runsOversold}/${s.runs} runs`);
  if (s.negativeStockRuns > 0) {
    parts.push(
      s.oversold > 0
        ? `stock went negative (min ${s.minFinalStock})`
        : `the counter went below zero (min ${s.minFinalStock}) but nothing was oversold`,
    );
  }
  if (s.duplicateBuyers > 0) parts.push(`${s.duplicateBuyers} duplicate buyers`);
  if (s.errors > 0) parts.push(`${s.errors} failed attempts`);
  if (s.unsold > 0) parts.push(`${s.unsold} units left unsold`);
  if (s.falseSoldOut > 0) parts.push(`${s.falseSoldOut} buyers told sold out while units were left`);
  return parts.length === 0 ? 'correct: no oversell, nothing left unsold' : parts.join('; ');
}

/** The summary table: one row per strategy (the terminal table and the README's Markdown). */
export function labTable(summaries: StrategySummary[]): TableData {
  const right = 'right' as const;
  return {
    columns: [
      { header: 'strategy' },
      { header: 'expected', wrap: true },
      { header: 'as expected' },
      { header: 'oversold (runs)', align: right },
      { header: 'min final stock', align: right },
      { header: 'duplicates', align: right },
      { header: 'unsold', align: right },
      { header: 'errors', align: right },
      { header: 'attempts/s', align: right },
      { header: 'p50 / p99 ms', align: right },
      { header: 'verdict', wrap: true },
    ],
    rows: summaries.map((s) => [
      s.strategy,
      s.expectation.replaceAll('_', ' '),
      s.asExpected ? 'yes' : 'NO',
      `${s.oversold} (${s.runsOversold}/${s.runs})`,
      String(s.minFinalStock),
      String(s.duplicateBuyers),
      String(s.unsold),
      String(s.errors),
      String(s.throughputPerSec),
      `${s.p50} / ${s.p99}`,
      verdict(s),
    ]),
  };
}

export function formatTable(
  summaries: StrategySummary[],
  style: TableStyle = 'markdown',
  width?: number,
): string[] {
  return renderTable(labTable(summaries), style, width);
}
