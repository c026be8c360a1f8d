import type { HistoryEvent } from './history.js';

/**
 * Direct checks of a lock history (the shape of RELIABILITY.md §4): what clients believed they held,
 * the tokens the lock service handed out, and what the fenced resource accepted. Linear sweeps, so
 * they scale to any history a test records; `checkLinearizable` answers the stronger question.
 *
 * Client events: `acquire` (`ok` with `owner`, `token`, optional `valid_until`; `mode` on the invoke:
 * 'x' exclusive (default), 'r'/'w' read-write, 'p' a permit of `permits`), `release` (its invoke ends
 * the hold: Maelstrom's rule), `lost` (`ok`: the client learned it lost the hold). Resource events
 * (`src: 'resource'`): `write` answered `ok` (accepted) or `fail` with `error: 'fence'`, with the
 * writer's `token` and `owner`, per resource `res`. Harness events (`src: 'harness'`): a fault
 * `{ f: 'fault', fault: 'kill', target: proc }` (SIGKILL) ends every hold of `target` then — a dead
 * process acts no more (RELIABILITY.md §4.2 L1: process death ends the interval).
 */

export interface Overlap {
  readonly lock: string;
  readonly owners: readonly string[];
  /** When the overlap began and how long it lasted, ns. */
  readonly at: string;
  readonly overlapNs: string;
}

export interface LockCheckReport {
  readonly valid: boolean;
  readonly checks: {
    /** L1/L5: believed holds never overlapped beyond what the mode allows. */
    readonly exclusion: { readonly valid: boolean; readonly violations: readonly Overlap[] };
    /** L3: an acquire that began after another's completed got a greater token (other owners). */
    readonly tokens: {
      readonly valid: boolean;
      readonly violations: ReadonlyArray<{
        readonly lock: string;
        readonly earlier: string;
        readonly later: string;
      }>;
    };
    /** L4: the resource accepted only writes with the greatest token so far; refused only stale ones. */
    readonly fence: {
      readonly valid: boolean;
      readonly acceptedStale: number;
      readonly refusedNeedlessly: number;
      readonly rejectedStale: number;
    };
  };
  /** Acquires whose outcome is unknown (they open no interval: the client did not enter). */
  readonly indeterminateAcquires: number;
}

interface Hold {
  readonly lock: string;
  readonly owner: string;
  readonly mode: string;
  readonly permits: number;
  readonly start: bigint;
  end: bigint;
}

const timeOf = (event: HistoryEvent, index: number): bigint =>
  event.t === undefined ? BigInt(index) : BigInt(event.t);

/** Runs every lock check; `strict` ignores `valid_until` (how long clients actually acted). */
export function checkLockHistory(
  events: readonly HistoryEvent[],
  options: { strict?: boolean } = {},
): LockCheckReport {
  const client = events.filter(
    (e) => (e.src !== 'resource' && e.src !== 'harness') || (e.src === 'harness' && isKill(e)),
  );
  const { holds, indeterminate } = holdsOf(client, events, options.strict ?? false);
  const exclusion = overlaps(holds);
  const tokens = tokenOrder(client, events);
  const fence = fenceSafety(events);
  const valid =
    exclusion.length === 0 &&
    tokens.length === 0 &&
    fence.acceptedStale === 0 &&
    fence.refusedNeedlessly === 0;
  return {
    valid,
    checks: {
      exclusion: { valid: exclusion.length === 0, violations: exclusion },
      tokens: { valid: tokens.length === 0, violations: tokens },
      fence: { valid: fence.acceptedStale === 0 && fence.refusedNeedlessly === 0, ...fence },
    },
    indeterminateAcquires: indeterminate,
  };
}

/** Believed holds: from an acquire's ok to the release's invoke, a `lost`, `valid_until` or the end. */
function holdsOf(client: readonly HistoryEvent[], all: readonly HistoryEvent[], strict: boolean) {
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

/** A harness event saying a process was SIGKILLed (its holds end there). */
const isKill = (event: HistoryEvent): boolean =>
  event.src === 'harness' &&
  event.f === 'fault' &&
  event.fault === 'kill' &&
  typeof event.target === 'string';

/** Sweeps each lock's hold endpoints; reports each stretch where the mode's bound was exceeded. */
function overlaps(holds: readonly Hold[]): Overlap[] {
  const byLock = new Map<string, Hold[]>();
  for (const hold of holds) {
    let list = byLock.get(hold.lock);
    if (!list) byLock.set(hold.lock, (list = []));
    list.push(hold);
  }
  const violations: Overlap[] = [];
  for (const [lock, list] of byLock) {
    const points = list.flatMap((hold) => [
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

/** Whether these simultaneous holds break their mode: exclusive, read-write or permits. */
function exceeds(inside: readonly Hold[]): boolean {
  const owners = new Set(inside.map((h) => h.owner));
  if (owners.size < 2) return false; // one owner (re-entrant holds) is fine
  const writers = inside.filter((h) => h.mode === 'x' || h.mode === 'w');
  if (writers.length > 0) return true; // a writer (or exclusive hold) beside another owner
  const permits = inside.filter((h) => h.mode === 'p');
  if (permits.length > 0) return permits.length > Math.max(...permits.map((h) => h.permits));
  return false; // readers only
}

/** L3: acquires ordered in real time (one completed before the other began) have growing tokens. */
function tokenOrder(client: readonly HistoryEvent[], all: readonly HistoryEvent[]) {
  const index = new Map(all.map((e, i) => [e, i]));
  const violations: Array<{ lock: string; earlier: string; later: string }> = [];
  const invokedAt = new Map<string, bigint>();
  const granted: Array<{ lock: string; owner: string; token: bigint; invoked: bigint; done: bigint }> = [];
  for (const event of client) {
    if (event.f !== 'acquire') continue;
    const t = timeOf(event, index.get(event)!);
    if (event.type === 'invoke') invokedAt.set(event.proc, t);
    else if (event.type === 'ok' && event.token !== undefined) {
      granted.push({
        lock: String(event.lock ?? 'lock'),
        owner: String(event.owner ?? event.proc),
        token: BigInt(String(event.token)),
        invoked: invokedAt.get(event.proc) ?? t,
        done: t,
      });
    }
  }
  // One sweep per lock, O(n log n): grants in the order they were invoked; before each, every grant
  // that completed earlier joins the "seen" set, of which only the greatest token and the greatest
  // token of another owner matter (the one to compare with when the greatest is the same owner's).
  type Grant = (typeof granted)[number];
  const byTime = (key: 'done' | 'invoked') => (a: Grant, b: Grant) =>
    a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0;
  const locks = new Map<string, Grant[]>();
  for (const grant of granted) locks.set(grant.lock, [...(locks.get(grant.lock) ?? []), grant]);
  for (const list of locks.values()) {
    const done = [...list].sort(byTime('done'));
    let next = 0;
    let best: Grant | undefined;
    let bestOther: Grant | undefined; // the greatest token of an owner other than best's
    for (const later of [...list].sort(byTime('invoked'))) {
      for (; next < done.length && done[next]!.done < later.invoked; next++) {
        const seen = done[next]!;
        if (!best || seen.token > best.token) {
          if (best && best.owner !== seen.owner) bestOther = best;
          best = seen;
        } else if (seen.owner !== best.owner && (!bestOther || seen.token > bestOther.token)) {
          bestOther = seen;
        }
      }
      const earlier = best && best.owner !== later.owner ? best : bestOther;
      if (earlier && later.token <= earlier.token) {
        violations.push({
          lock: later.lock,
          earlier: `${earlier.owner}@${earlier.token}`,
          later: `${later.owner}@${later.token}`,
        });
      }
    }
  }
  return violations;
}

/** L4 at the resource, in the order it decided: accepted writes never stale, refusals never needless. */
function fenceSafety(events: readonly HistoryEvent[]) {
  const best = new Map<string, { token: bigint; owner: string }>();
  let acceptedStale = 0;
  let refusedNeedlessly = 0;
  let rejectedStale = 0;
  for (const event of events) {
    if (event.src !== 'resource' || event.f !== 'write' || event.token === undefined) continue;
    const res = String(event.res ?? 'resource');
    const token = BigInt(String(event.token));
    const owner = String(event.owner ?? '');
    const max = best.get(res);
    const fresh = !max || token > max.token || (token === max.token && owner === max.owner);
    if (event.type === 'ok') {
      if (!fresh) acceptedStale++;
      else best.set(res, { token, owner });
    } else if (event.type === 'fail' && event.error === 'fence') {
      if (fresh) refusedNeedlessly++;
      else rejectedStale++;
    }
  }
  return { acceptedStale, refusedNeedlessly, rejectedStale };
}
