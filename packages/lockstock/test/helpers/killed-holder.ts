import { expect } from 'vitest';
import { checkLockHistory, type LockCheckReport } from '../../src/checker/index.js';
import type { LockHandle } from '../../src/index.js';
import { killAndTime, mergeHistories, type Fixtures } from './crash.js';
import { HistoryRecorder } from './recorder.js';

export interface KilledHolderTrials {
  /** The fault rows' fixture processes (useFixtures()). */
  readonly fixtures: Fixtures;
  /** How many times: a fresh lock, holder and waiter each. */
  readonly trials: number;
  /** A fresh lock name per trial. */
  lockName(trial: number): string;
  /** fixtures/fault-holder.mjs's arguments for a holder of `name` (its history file included). */
  holderArgs(name: string): object;
  /** The waiter: an acquire of `name` by a client of this process (another process than the holder's). */
  take(name: string): Promise<LockHandle>;
  /** Resolves once the waiter is queued or has been refused at least once (optional). */
  queued?(name: string): Promise<void>;
  /** Longest the lock may stay with the dead holder, counted from the SIGKILL, ms. */
  readonly boundMs: number;
}

export interface KilledHolderOutcome {
  readonly freedAfterMs: number[];
  readonly report: LockCheckReport;
}

/**
 * Fault row 1 (RELIABILITY.md §3.2, "holder SIGKILL mid-critical-section") for any backend: per trial a
 * holder process (fixtures/fault-holder.mjs) takes the lock and says so, a client of this process
 * starts waiting for it, and the holder is SIGKILLed. The waiter must get the lock within `boundMs` of
 * the kill with a greater token; the history (this process's events, the harness's kill, the holder's
 * own file) must pass lockstock/checker in strict mode — no overlap of what anyone believed, tokens
 * growing.
 */
export async function killHolders(options: KilledHolderTrials): Promise<KilledHolderOutcome> {
  const freedAfterMs: number[] = [];
  const recorder = new HistoryRecorder();
  for (let trial = 0; trial < options.trials; trial++) {
    const name = options.lockName(trial);
    const dying = options.fixtures.fork('fault-holder.mjs', options.holderArgs(name));
    const { token, owner } = await dying.next('holding');
    const waiting = recorder.acquire(`waiter-${name}`, name, () => options.take(name));
    waiting.catch(() => undefined); // awaited below; a failure fails the row there
    await options.queued?.(name);
    recorder.fault('kill', owner);
    const { result: next, freedAfterMs: freed } = await killAndTime(dying, waiting);
    freedAfterMs.push(freed);
    expect(next.fencingToken).toBeGreaterThan(token as number);
    expect(freed).toBeLessThanOrEqual(options.boundMs);
    await recorder.release(`waiter-${name}`, name, next);
  }
  const report = checkLockHistory(mergeHistories(recorder.events, options.fixtures.histories()), {
    strict: true,
  });
  expect(report.valid).toBe(true);
  expect(report.indeterminateAcquires).toBe(0);
  return { freedAfterMs, report };
}

/** `12 ms, 980 ms`: each trial's time to the next holder, for a row's `observed`. */
export const shownMs = (values: readonly number[]): string =>
  values.map((ms) => `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`).join(', ');
