import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import type { LockCheckReport } from '../../src/checker/index.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where `npm run test:faults` collects the rows (test/faults-report-setup.ts); unset in `npm test`. */
    lockFaultRowsDir: string;
  }
}

/**
 * The outcome a fault row expects (RELIABILITY.md §3.0): OK — exclusion holds; VIOL — two believed
 * holders, by design, which the checker must find; F-OK — whatever the clients believed, the fenced
 * resource accepted nothing stale; UNAV — refused or timed out, never a false success; LIVE — safe,
 * with a bounded unavailability.
 */
export type Outcome = 'OK' | 'VIOL' | 'F-OK' | 'UNAV' | 'LIVE';

/** One row × backend of the lock fault table (docs/faults.json, `locks.rows`). */
export interface LockFaultRow {
  /** Stable id, e.g. `redlock-3-of-5-down`. */
  readonly row: string;
  /** 'redis' | 'redlock' | 'sentinel' | 'cluster' | 'etcd' | 'zookeeper' | 'postgres' | 'mysql' | 'local'. */
  readonly backend: string;
  /** The fault, in plain words. */
  readonly fault: string;
  readonly expected: readonly Outcome[];
  /** What happened, in plain words (the figures the test measured). */
  readonly observed: string;
  /**
   * A known defect the row shows (observed differs from expected, and the test asserts what happens
   * today, so it fails once the defect is fixed and must then be turned around).
   */
  readonly defect?: string;
  /** The test file, relative to packages/lockstock. */
  readonly file: string;
  readonly checker: LockCheckReport;
  /** Measured numbers worth a column (ms, counts), by name. */
  readonly figures?: Readonly<Record<string, number>>;
}

/**
 * Writes `row` for the fault table when the fault suite asks for it (`npm run test:faults` provides a
 * directory in its global setup, which collects the rows afterwards; LOCKSTOCK_LOCK_ROWS_DIR does the
 * same for a single file run by hand); in `npm test` nothing is written. Call it only after the row's
 * assertions passed: a failing row is not reported as observed.
 */
export function reportRow(row: LockFaultRow): void {
  const dir = (inject('lockFaultRowsDir') as string | undefined) ?? process.env.LOCKSTOCK_LOCK_ROWS_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  const { checker } = row;
  const summary = {
    ...row,
    checker: {
      valid: checker.valid,
      overlaps: checker.checks.exclusion.violations.length,
      overlapOwners: [...new Set(checker.checks.exclusion.violations.flatMap((v) => v.owners))],
      tokenRegressions: checker.checks.tokens.violations.length,
      acceptedStale: checker.checks.fence.acceptedStale,
      rejectedStale: checker.checks.fence.rejectedStale,
      refusedNeedlessly: checker.checks.fence.refusedNeedlessly,
      indeterminateAcquires: checker.indeterminateAcquires,
    },
  };
  writeFileSync(join(dir, `${row.row}--${row.backend}.json`), `${JSON.stringify(summary, null, 2)}\n`);
}

/** Whether full-size variants run (`npm run test:faults`), or the quick ones of `npm test`. */
export const fullFaultSuite = (): boolean => process.env.LOCKSTOCK_FAULTS_FULL === '1';
