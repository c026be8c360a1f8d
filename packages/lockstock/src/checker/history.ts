/**
 * Histories in Jepsen's style, as JSON Lines: each process writes `invoke` when it calls an operation
 * and `ok`, `fail` or `info` when it returns (`info`: the outcome is unknown — a timeout, a crash).
 * Times are monotonic nanoseconds as decimal strings (`process.hrtime.bigint()`: comparable across
 * the processes of one machine; JSON numbers lose precision past 2^53), or plain numbers.
 */

/** One line of a history. Fields beyond these are kept and passed to checks and models. */
export interface HistoryEvent {
  readonly type: 'invoke' | 'ok' | 'fail' | 'info';
  /** The logical process; a process that went indeterminate continues under a new id (Jepsen). */
  readonly proc: string;
  /** The operation: 'acquire', 'release', 'read', 'write', 'cas', 'get', 'put', 'append'… */
  readonly f: string;
  /** Monotonic time, ns; when absent, the line's position orders it. */
  readonly t?: string | number;
  readonly value?: unknown;
  readonly [field: string]: unknown;
}

/** An operation: an invocation paired with its completion. */
export interface Operation {
  readonly id: number;
  readonly proc: string;
  readonly f: string;
  /** The invocation's event (its value is the operation's input). */
  readonly input: HistoryEvent;
  /** The completion's event; undefined when the outcome is unknown. */
  readonly output: HistoryEvent | undefined;
  /** 'ok' took effect, 'fail' did not, 'unknown' may have at any time after `call`, or never. */
  readonly outcome: 'ok' | 'fail' | 'unknown';
  readonly call: bigint;
  /** Infinity-like for unknown outcomes: see `UNKNOWN_RETURN`. */
  readonly return: bigint;
}

/** The return time of an operation whose outcome is unknown: after everything else. */
export const UNKNOWN_RETURN = 2n ** 63n;

/**
 * A history that cannot be read or does not make sense: a line that is not JSON or lacks its type
 * and process, a process that invokes again before its last operation returned, or completes one it
 * never invoked. The message names the line or the process.
 */
export class HistoryError extends Error {
  override readonly name = 'HistoryError';
}

/** Parses JSON Lines (blank lines skipped); an unparsable line is a HistoryError naming it. */
export function parseHistory(text: string): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let event: HistoryEvent;
    try {
      event = JSON.parse(line) as HistoryEvent;
    } catch (error) {
      throw new HistoryError(`line ${index + 1} is not JSON: ${(error as Error).message}`);
    }
    if (!['invoke', 'ok', 'fail', 'info'].includes(event.type) || typeof event.proc !== 'string') {
      throw new HistoryError(`line ${index + 1} needs a type (invoke/ok/fail/info) and a proc`);
    }
    events.push(event);
  });
  return events;
}

/** Serializes events as JSON Lines (bigint times as decimal strings). */
export function formatHistory(events: readonly HistoryEvent[]): string {
  return events
    .map((event) => JSON.stringify(event, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)))
    .join('\n');
}

/**
 * Pairs each invocation with the next completion of the same process. An invocation a process never
 * completed (or completed with `info`) has an unknown outcome. Events without `t` are timed by their
 * position. A completion without an invocation, or a second invocation before the first completed,
 * is a HistoryError (a process runs one operation at a time).
 */
export function operationsOf(events: readonly HistoryEvent[]): Operation[] {
  const pending = new Map<string, { event: HistoryEvent; at: bigint; id: number }>();
  const operations: Operation[] = [];
  let ids = 0;
  events.forEach((event, index) => {
    const at = event.t === undefined ? BigInt(index) : BigInt(event.t);
    if (event.type === 'invoke') {
      if (pending.has(event.proc)) {
        throw new HistoryError(`process ${event.proc} invoked ${event.f} before its last operation returned`);
      }
      pending.set(event.proc, { event, at, id: ids++ });
      return;
    }
    const open = pending.get(event.proc);
    if (!open) throw new HistoryError(`process ${event.proc} completed ${event.f} without invoking it`);
    pending.delete(event.proc);
    const known = event.type !== 'info';
    operations.push({
      id: open.id,
      proc: event.proc,
      f: open.event.f,
      input: open.event,
      output: known ? event : undefined,
      outcome: known ? event.type : 'unknown',
      call: open.at,
      return: known ? at : UNKNOWN_RETURN,
    });
  });
  for (const open of pending.values()) {
    operations.push({
      id: open.id,
      proc: open.event.proc,
      f: open.event.f,
      input: open.event,
      output: undefined,
      outcome: 'unknown',
      call: open.at,
      return: UNKNOWN_RETURN,
    });
  }
  return operations.sort((a, b) => a.id - b.id);
}
