/** What the lock checks (locks.ts, one module per rule) share: holds, event times, kills, modes. */
import type { HistoryEvent } from './history.js';

/** A believed hold of a lock: from the acquire's ok to its end (see holdsOf in exclusion.ts). */
export interface Hold {
  readonly lock: string;
  readonly owner: string;
  readonly mode: string;
  readonly permits: number;
  readonly start: bigint;
  end: bigint;
}

/** An event's time: its `t`, or its place in the history when it has none. */
export const timeOf = (event: HistoryEvent, index: number): bigint =>
  event.t === undefined ? BigInt(index) : BigInt(event.t);

/** A harness event saying a process was SIGKILLed (its holds end there). */
export const isKill = (event: HistoryEvent): boolean =>
  event.src === 'harness' &&
  event.f === 'fault' &&
  event.fault === 'kill' &&
  typeof event.target === 'string';

/** Whether these simultaneous holds break their mode: exclusive, read-write or permits. */
export function exceeds(inside: readonly Hold[]): boolean {
  const owners = new Set(inside.map((h) => h.owner));
  if (owners.size < 2) return false; // one owner (re-entrant holds) is fine
  const writers = inside.filter((h) => h.mode === 'x' || h.mode === 'w');
  if (writers.length > 0) return true; // a writer (or exclusive hold) beside another owner
  const permits = inside.filter((h) => h.mode === 'p');
  if (permits.length > 0) return permits.length > Math.max(...permits.map((h) => h.permits));
  return false; // readers only
}

/** Later than any time of a history: a waiter's place kept to the end. */
export const UNTIL_END = 2n ** 64n;
