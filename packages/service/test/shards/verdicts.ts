/**
 * The split sale's "told sold out while units remained" oracle, on the Redis clock. A serve run with
 * LOCKSTOCK_RECORD_VERDICTS=1 prints every sold-out verdict its double collect proved (split-reserver.ts)
 * with the interval it held on: every part's first read was done by `fromUs`, every second read began
 * at `toUs` or later, and no part changed in between. The record dates every reservation by its
 * stream entry (Redis time, ms). A verdict is false if, at `toUs`, the record still had as many units
 * left as the buyer asked for; its `left` must be what the record had left within [fromUs, toUs].
 * Transfers move units between parts and change no total, so the sale's units left at an instant are
 * its stock less the units reserved before it (no order of these runs is cancelled or expires).
 */

/** One proven sold-out verdict as a serve printed it. */
export interface Verdict {
  saleId: string;
  fromUs: number;
  toUs: number;
  /** Units the proof found left in the whole sale (fewer than `wanted`). */
  left: number;
  wanted: number;
}

/** A recorded reservation: its units and its stream entry's Redis time, ms. */
export interface RecordedUnits {
  quantity: number;
  reservedAtMs: number;
}

const LINE = /^verdict:sold_out (\S+) (\d+) (\d+) (\d+) (\d+)$/;

/** The verdicts among a process's output lines. */
export function verdictsIn(lines: readonly string[]): Verdict[] {
  const verdicts: Verdict[] = [];
  for (const line of lines) {
    const match = LINE.exec(line);
    if (!match) continue;
    const [, saleId, fromUs, toUs, left, wanted] = match as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    verdicts.push({
      saleId,
      fromUs: Number(fromUs),
      toUs: Number(toUs),
      left: Number(left),
      wanted: Number(wanted),
    });
  }
  return verdicts;
}

/**
 * The verdicts the record contradicts, each with why. Entry times have millisecond resolution, so a
 * reservation in the verdict's own millisecond is counted as before it when judging "units remained"
 * (never a false alarm) and as after it when bounding what was left from above.
 */
export function contradictedVerdicts(
  verdicts: readonly Verdict[],
  reservations: readonly RecordedUnits[],
  stock: number,
): string[] {
  const sorted = [...reservations].sort((a, b) => a.reservedAtMs - b.reservedAtMs);
  /** Units reserved in entries dated up to `ms` (inclusive) or before it (exclusive). */
  const reservedBy = (ms: number, inclusive: boolean) => {
    let units = 0;
    for (const r of sorted) {
      if (inclusive ? r.reservedAtMs > ms : r.reservedAtMs >= ms) break;
      units += r.quantity;
    }
    return units;
  };
  const wrong: string[] = [];
  for (const v of verdicts) {
    if (v.fromUs > v.toUs) wrong.push(`${describe(v)}: its interval is empty`);
    const leftAtLeast = stock - reservedBy(Math.floor(v.toUs / 1000), true);
    const leftAtMost = stock - reservedBy(Math.floor(v.fromUs / 1000), false);
    if (leftAtLeast >= v.wanted) {
      wrong.push(`${describe(v)}: the record had at least ${leftAtLeast} units left then (sold out falsely)`);
    } else if (v.left < leftAtLeast || v.left > leftAtMost) {
      wrong.push(`${describe(v)}: the record had ${leftAtLeast}..${leftAtMost} units left then`);
    }
  }
  return wrong;
}

function describe(v: Verdict): string {
  return `sold out at Redis time ${new Date(v.toUs / 1000).toISOString()} (${v.left} left, ${v.wanted} asked)`;
}
