/** L1/L5 of checkLockHistory: believed holds never overlap beyond what their mode allows. */
import type { HistoryEvent } from './history.js';
import { exceeds, isKill, timeOf, type Hold } from './lock-events.js';
import type { Overlap } from './lock-report.js';

/** Believed holds: from an acquire's ok to the release's invoke, a `lost`, `valid_until` or the end. */
export function holdsOf(client: readonly HistoryEvent[], all: readonly HistoryEvent[], strict: boolean) {
  // A hold never released, lost or timed out is still held when the history ends: just past its end.
  const end = all.length === 0 ? 0n : timeOf(all[all.length - 1]!, all.length - 1) + 1n;
  const index = new Map(all.map((e, i) => [e, i]));
  const open = new Map<string, Hold[]>(); // proc+lock → its holds, innermost last
  const invokes = new Map<string, HistoryEvent>();
  const holds: Hold[] = [];
  let indeterminate = 0;
  for (const event of client) {
    const t = timeOf(event, index.get(event)!);
    if (isKill(event)) {
      const victim = `${String(event.target)}\u0000`;
      for (const [slot, list] of open) {
        if (!slot.startsWith(victim)) continue;
        for (const hold of list) if (hold.end > t) hold.end = t;
        open.delete(slot);
      }
      continue;
    }
    if (event.f === 'queued' || event.f === 'offered') continue; // a queue's events: no hold, no completion
    const lock = String(event.lock ?? 'lock');
    const slot = `${event.proc}\u0000${lock}`;
    if (event.type === 'invoke') {
      invokes.set(event.proc, event);
      if (event.f === 'release') {
        const hold = open.get(slot)?.pop();
        if (hold) hold.end = hold.end < t ? hold.end : t;
      }
      continue;
    }
    const invoke = invokes.get(event.proc);
    invokes.delete(event.proc);
    if (event.f === 'acquire' && event.type === 'info') indeterminate++;
    if (event.f === 'acquire' && event.type === 'ok') {
      const validUntil = !strict && event.valid_until !== undefined ? BigInt(String(event.valid_until)) : end;
      const hold: Hold = {
        lock,
        owner: String(event.owner ?? event.proc),
        mode: String(invoke?.mode ?? event.mode ?? 'x'),
        permits: Number(invoke?.permits ?? event.permits ?? 1),
        start: t,
        end: validUntil,
      };
      holds.push(hold);
      let list = open.get(slot);
      if (!list) open.set(slot, (list = []));
      list.push(hold);
    }
    if (event.f === 'lost' && event.type === 'ok') {
      for (const hold of open.get(slot) ?? []) if (hold.end > t) hold.end = t;
      open.delete(slot);
    }
  }
  for (const event of invokes.values()) if (event.f === 'acquire') indeterminate++;
  return { holds, indeterminate };
}

/** Sweeps each lock's hold endpoints; reports each stretch where the mode's bound was exceeded. */
export function overlaps(holds: readonly Hold[]): Overlap[] {
  const byLock = new Map<string, Hold[]>();
  for (const hold of holds) {
    let list = byLock.get(hold.lock);
    if (!list) byLock.set(hold.lock, (list = []));
    list.push(hold);
  }
  const violations: Overlap[] = [];
  for (const [lock, list] of byLock) {
    // A hold that ended the instant it began (released, lost or past its valid_until at once)
    // overlaps nothing — and, sorted end first at that instant, it would never leave the sweep.
    const points = list
      .filter((hold) => hold.end > hold.start)
      .flatMap((hold) => [
        { t: hold.start, open: true, hold },
        { t: hold.end, open: false, hold },
      ]);
    // An end before a start at the same instant: holds that touch do not overlap.
    points.sort((a, b) => (a.t !== b.t ? (a.t < b.t ? -1 : 1) : a.open === b.open ? 0 : a.open ? 1 : -1));
    const inside = new Set<Hold>();
    let since: bigint | undefined;
    let owners: string[] = [];
    for (const point of points) {
      if (point.open) inside.add(point.hold);
      else inside.delete(point.hold);
      const bad = exceeds([...inside]);
      if (bad && since === undefined) {
        since = point.t;
        owners = [...new Set([...inside].map((h) => h.owner))];
      } else if (!bad && since !== undefined) {
        violations.push({ lock, owners, at: String(since), overlapNs: String(point.t - since) });
        since = undefined;
      }
    }
  }
  return violations;
}
