import type { HistoryEvent } from './history.js';
import { timeOf } from './lock-events.js';

/** L3: acquires ordered in real time (one completed before the other began) have growing tokens. */
export function tokenOrder(client: readonly HistoryEvent[], all: readonly HistoryEvent[]) {
  const index = new Map(all.map((e, i) => [e, i]));
  const violations: Array<{ lock: string; earlier: string; later: string }> = [];
  const invokedAt = new Map<string, bigint>();
  const granted: Array<{ lock: string; owner: string; token: bigint; invoked: bigint; done: bigint }> = [];
  // A re-entry returns the holder's own token (lock, owner and token all seen before): it may be
  // smaller than a token another reader or permit holder got meanwhile, and orders nothing.
  const seen = new Set<string>();
  for (const event of client) {
    if (event.f !== 'acquire') continue;
    const t = timeOf(event, index.get(event)!);
    if (event.type === 'invoke') invokedAt.set(event.proc, t);
    else if (event.type === 'ok' && event.token !== undefined) {
      const lock = String(event.lock ?? 'lock');
      const owner = String(event.owner ?? event.proc);
      const token = BigInt(String(event.token));
      const grant = `${lock}\u0000${owner}\u0000${token}`;
      if (seen.has(grant)) continue;
      seen.add(grant);
      granted.push({ lock, owner, token, invoked: invokedAt.get(event.proc) ?? t, done: t });
    }
  }
  // One sweep per lock, O(n log n): grants in the order they were invoked; before each, every grant
  // that completed earlier joins the "seen" set, of which only the greatest token and the greatest
  // token of another owner matter (the one to compare with when the greatest is the same owner's).
  type Grant = (typeof granted)[number];
  const byTime = (key: 'done' | 'invoked') => (a: Grant, b: Grant) =>
    a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0;
  const locks = new Map<string, Grant[]>();
  for (const grant of granted) {
    let list = locks.get(grant.lock);
    if (!list) locks.set(grant.lock, (list = []));
    list.push(grant);
  }
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
