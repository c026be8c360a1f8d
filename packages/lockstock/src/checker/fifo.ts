import type { HistoryEvent } from './history.js';
import { isKill, timeOf, UNTIL_END } from './lock-events.js';
import type { FifoViolation } from './lock-report.js';

/** L6: per fair lock, no waiter granted ahead of one known to be queued before its acquire began. */
export function fifoOrder(
  client: readonly HistoryEvent[],
  all: readonly HistoryEvent[],
  fair: true | readonly string[],
): FifoViolation[] {
  const index = new Map(all.map((e, i) => [e, i]));
  const isFair = (lock: string) => fair === true || fair.includes(lock);
  interface Waiter {
    readonly proc: string;
    readonly lock: string;
    readonly invokedAt: bigint;
    readonly reentry: boolean;
    queuedAt?: bigint;
    /** When the store first granted it (an `offered` event): its place ends there at the latest. */
    offeredAt?: bigint;
    outcome?: 'ok' | 'gave-up' | 'killed';
    owner?: string;
    doneAt?: bigint;
  }
  const held = new Map<string, number>(); // proc+lock → holds (re-entry does not queue)
  const pending = new Map<string, Waiter>(); // proc → its acquire in progress
  const waiters: Waiter[] = [];
  for (const event of client) {
    if (isKill(event)) {
      for (const [slot, count] of held)
        if (count > 0 && slot.startsWith(`${String(event.target)}\u0000`)) held.delete(slot);
      const waiter = pending.get(String(event.target));
      if (waiter) waiter.outcome = 'killed';
      pending.delete(String(event.target));
      continue;
    }
    const lock = String(event.lock ?? 'lock');
    const slot = `${event.proc}\u0000${lock}`;
    const t = timeOf(event, index.get(event)!);
    if (event.f === 'queued') {
      const waiter = pending.get(event.proc);
      if (waiter && waiter.lock === lock && waiter.queuedAt === undefined) waiter.queuedAt = t;
    } else if (event.f === 'offered') {
      const waiter = pending.get(event.proc);
      if (waiter && waiter.lock === lock && waiter.offeredAt === undefined) waiter.offeredAt = t;
    } else if (event.f === 'acquire' && event.type === 'invoke') {
      const waiter: Waiter = { proc: event.proc, lock, invokedAt: t, reentry: (held.get(slot) ?? 0) > 0 };
      pending.set(event.proc, waiter);
      if (isFair(lock)) waiters.push(waiter);
    } else if (event.f === 'acquire') {
      const waiter = pending.get(event.proc);
      pending.delete(event.proc);
      if (!waiter) continue;
      waiter.doneAt = t;
      waiter.outcome = event.type === 'ok' ? 'ok' : 'gave-up';
      if (event.type === 'ok') {
        waiter.owner = String(event.owner ?? event.proc);
        held.set(slot, (held.get(slot) ?? 0) + 1);
      }
    } else if (event.f === 'release' && event.type === 'invoke') {
      held.set(slot, Math.max(0, (held.get(slot) ?? 0) - 1));
    } else if (event.f === 'lost' && event.type === 'ok') {
      held.delete(slot);
    }
  }
  const violations: FifoViolation[] = [];
  // Until when each queued waiter kept its place: its grant, or the end (no grant, no give-up, no
  // kill), or the store's first grant to it if one was seen. A waiter that gave up or was killed
  // keeps none.
  const heldPlace = (w: Waiter) => {
    const place = w.outcome === 'ok' ? w.doneAt! : w.outcome === undefined ? UNTIL_END : -1n;
    return w.offeredAt !== undefined && w.offeredAt < place ? w.offeredAt : place;
  };
  const byLock = new Map<string, Waiter[]>();
  for (const waiter of waiters) {
    let list = byLock.get(waiter.lock);
    if (!list) byLock.set(waiter.lock, (list = []));
    list.push(waiter);
  }
  for (const list of byLock.values()) {
    // One sweep, O(n log n) when nobody is overtaken: later waiters by when they began; the queued
    // ones known before each joins the prefix, of which only the longest-kept place matters unless it
    // outlasts the later one's grant (then the prefix is searched for every waiter it passed).
    const queued = list
      .filter((w) => w.queuedAt !== undefined && !w.reentry)
      .sort((a, b) => (a.queuedAt! < b.queuedAt! ? -1 : a.queuedAt! > b.queuedAt! ? 1 : 0));
    const granted = list
      .filter((w) => w.outcome === 'ok' && !w.reentry)
      .sort((a, b) => (a.invokedAt < b.invokedAt ? -1 : a.invokedAt > b.invokedAt ? 1 : 0));
    let known = 0;
    let longest = -1n;
    for (const later of granted) {
      for (; known < queued.length && queued[known]!.queuedAt! < later.invokedAt; known++) {
        const place = heldPlace(queued[known]!);
        if (place > longest) longest = place;
      }
      if (longest <= later.doneAt!) continue;
      for (const earlier of queued.slice(0, known)) {
        // Still waiting when the later one was granted: granted after it, or never.
        if (earlier.proc === later.proc || heldPlace(earlier) <= later.doneAt!) continue;
        violations.push({
          lock: later.lock,
          overtaken: earlier.owner ?? earlier.proc,
          by: later.owner ?? later.proc,
          queuedAt: String(earlier.queuedAt),
          invokedAt: String(later.invokedAt),
          grantedAt: String(later.doneAt),
        });
      }
    }
  }
  return violations;
}
