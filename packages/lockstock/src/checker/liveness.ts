import type { HistoryEvent } from './history.js';
import { exceeds, isKill, timeOf, type Hold } from './lock-events.js';
import type { LivenessViolation } from './lock-report.js';

/**
 * L7: per lock, each stretch in which some pending acquire could have been granted (the holds left
 * admit it: `exceeds`) and none was, ends within `bound` — by a grant, or by those waiters giving up.
 * A waiter is another owner than every hold (a holder's own acquire that waits is its own deadlock).
 */
export function grantsWithin(
  client: readonly HistoryEvent[],
  all: readonly HistoryEvent[],
  bound: bigint,
): LivenessViolation[] {
  const index = new Map(all.map((e, i) => [e, i]));
  interface LiveHold extends Hold {
    readonly proc: string;
    readonly until: bigint | undefined;
  }
  interface Pending {
    readonly proc: string;
    readonly mode: string;
    readonly permits: number;
  }
  interface PerLock {
    holds: LiveHold[];
    pending: Map<string, Pending>;
    /** How many pending acquires of each mode (and permits): admission is judged once per kind. */
    kinds: Map<string, { mode: string; permits: number; count: number }>;
    releasing: Map<string, LiveHold>;
    since: bigint | undefined;
    /** The waiters that left (granted, gave up, killed) during the current stretch. */
    left: string[];
  }
  const locks = new Map<string, PerLock>();
  const stateOf = (lock: string): PerLock => {
    let state = locks.get(lock);
    if (!state) {
      state = {
        holds: [],
        pending: new Map(),
        kinds: new Map(),
        releasing: new Map(),
        since: undefined,
        left: [],
      };
      locks.set(lock, state);
    }
    return state;
  };
  const kindOf = (w: { mode: string; permits: number }) => `${w.mode}\u0000${w.permits}`;
  const wait = (state: PerLock, waiter: Pending) => {
    state.pending.set(waiter.proc, waiter);
    const kind = state.kinds.get(kindOf(waiter));
    if (kind) kind.count++;
    else state.kinds.set(kindOf(waiter), { mode: waiter.mode, permits: waiter.permits, count: 1 });
  };
  const leave = (state: PerLock, proc: string) => {
    const waiter = state.pending.get(proc);
    if (!waiter) return;
    state.pending.delete(proc);
    const kind = state.kinds.get(kindOf(waiter))!;
    if (--kind.count === 0) state.kinds.delete(kindOf(waiter));
    if (state.since !== undefined) state.left.push(proc);
  };
  /** Whether a waiter of this mode would fit beside the holds (as another owner than all of them). */
  const fits = (state: PerLock, kind: { mode: string; permits: number }) =>
    !exceeds([...state.holds, { lock: '', owner: '\u0000waiter', ...kind, start: 0n, end: 0n }]);
  const violations: LivenessViolation[] = [];
  /** Ends the current stretch at `t` (reporting it if too long), then starts one if a waiter can go in. */
  const settle = (
    lock: string,
    state: PerLock,
    t: bigint,
    endedBy: LivenessViolation['endedBy'] | undefined,
  ) => {
    const ready = [...state.kinds.values()].some((kind) => fits(state, kind));
    if (state.since !== undefined && (endedBy !== undefined || !ready)) {
      if (t - state.since > bound) {
        const waiting = [...state.pending.values()].filter((w) => fits(state, w)).map((w) => w.proc);
        violations.push({
          lock,
          since: String(state.since),
          waitedNs: String(t - state.since),
          endedBy: endedBy ?? 'waiters-gone',
          waiters: [...new Set([...state.left, ...waiting])],
        });
      }
      state.since = undefined;
    }
    if (state.since === undefined && ready && endedBy !== 'history-end') {
      state.since = t;
      state.left = [];
    }
  };
  /** Ends the holds whose `valid_until` passed by `t`, one moment at a time. */
  const leased = new Set<string>(); // the locks with a hold that has a valid_until: only they expire
  const expire = (t: bigint) => {
    for (const lock of leased) {
      const state = locks.get(lock)!;
      for (;;) {
        const due = state.holds.filter((h) => h.until !== undefined && h.until <= t);
        if (due.length === 0) {
          if (!state.holds.some((h) => h.until !== undefined)) leased.delete(lock);
          break;
        }
        const at = due.reduce((min, h) => (h.until! < min ? h.until! : min), due[0]!.until!);
        state.holds = state.holds.filter((h) => h.until === undefined || h.until > at);
        settle(lock, state, at, undefined);
      }
    }
  };
  const invokes = new Map<string, HistoryEvent>();
  let now = 0n;
  for (const event of client) {
    const t = timeOf(event, index.get(event)!);
    now = t;
    expire(t);
    if (isKill(event)) {
      for (const [lock, state] of locks) {
        // A dead holder's lease still runs (its valid_until, when recorded); a dead waiter waits no more.
        state.holds = state.holds.filter((h) => h.proc !== event.target || h.until !== undefined);
        leave(state, String(event.target));
        settle(lock, state, t, undefined);
      }
      continue;
    }
    if (event.f === 'queued' || event.f === 'offered') continue;
    const lock = String(event.lock ?? 'lock');
    const state = stateOf(lock);
    if (event.type === 'invoke') {
      invokes.set(event.proc, event);
      if (event.f === 'acquire') {
        wait(state, {
          proc: event.proc,
          mode: String(event.mode ?? 'x'),
          permits: Number(event.permits ?? 1),
        });
      } else if (event.f === 'release') {
        const mine = state.holds.findLastIndex((h) => h.proc === event.proc);
        if (mine >= 0) state.releasing.set(event.proc, state.holds[mine]!);
      }
      settle(lock, state, t, undefined);
      continue;
    }
    const invoke = invokes.get(event.proc);
    invokes.delete(event.proc);
    if (event.f === 'acquire') {
      leave(state, event.proc);
      if (event.type === 'ok') {
        state.holds.push({
          lock,
          proc: event.proc,
          owner: String(event.owner ?? event.proc),
          mode: String(invoke?.mode ?? event.mode ?? 'x'),
          permits: Number(invoke?.permits ?? event.permits ?? 1),
          start: t,
          end: t,
          until: event.valid_until === undefined ? undefined : BigInt(String(event.valid_until)),
        });
        if (event.valid_until !== undefined) leased.add(lock);
        settle(lock, state, t, 'grant');
        continue;
      }
    } else if (event.f === 'release') {
      const hold = state.releasing.get(event.proc);
      state.releasing.delete(event.proc);
      // Released (or not ours any more): gone. A failed or unknown release leaves it to its lease.
      if (hold && event.type === 'ok') state.holds = state.holds.filter((h) => h !== hold);
    } else if (event.f === 'lost' && event.type === 'ok') {
      state.holds = state.holds.filter((h) => h.proc !== event.proc);
    }
    settle(lock, state, t, undefined);
  }
  expire(now);
  for (const [lock, state] of locks) settle(lock, state, now, 'history-end');
  return violations;
}
