import type { FencedOutError } from '../store/fenced-out.js';
import type { ReadEntry } from './stream.js';

/**
 * Whether a failed database write is worth retrying as is (the database or the connection had a
 * problem) or is caused by the data (retrying the same entries fails again: split the batch and
 * dead-letter the entry that keeps failing).
 */
export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== 'string') return true; // network errors, pool errors, unknown: retry
  if (/^(08|53|57|58)/.test(code)) return true; // connection, resources, operator intervention, system
  if (code === '40001' || code === '40P01') return true; // serialization failure, deadlock
  return !/^(22|23|42)/.test(code); // data exception, integrity violation, syntax: permanent
}

/**
 * What a step read and may not record (store/fenced-out.ts): the refused batch, and the batch read
 * ahead with it. The step ends; the pipeline drops them and counts the ones Redis no longer has.
 */
export class FencedOutStep extends Error {
  override readonly name = 'FencedOutStep';

  constructor(
    readonly entries: ReadEntry[],
    cause: FencedOutError,
  ) {
    super(cause.message, { cause });
  }
}
