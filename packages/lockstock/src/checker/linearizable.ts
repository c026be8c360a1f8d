import type { Operation } from './history.js';

/**
 * A sequential specification: what an operation may do to a state. Nondeterministic on purpose — an
 * operation may leave several states (a timed-out write did or did not happen), and none when it
 * cannot happen in that state (a read that returns another value, an acquire of a held mutex).
 */
export interface Model<S> {
  readonly name: string;
  readonly init: S;
  /**
   * The states `op` may leave when applied to `state`; empty: it cannot happen there. For an
   * operation of unknown outcome (`op.outcome === 'unknown'`) the checker adds "no effect" itself.
   */
  step(state: S, op: Operation): readonly S[];
  /** Equal states, equal keys (the search memoizes on them). */
  key(state: S): string;
  /** Independent parts of the history (a key-value store's keys), checked one by one. */
  partition?(op: Operation): string;
}

/**
 * What `checkLinearizable` found: whether the history is linearizable (or 'unknown' when the search
 * ran out of time), how much it looked at, and, when it is not, a counterexample to read.
 */
export interface LinearizabilityResult {
  /** 'unknown': the search ran out of time (`timeoutMs`) before deciding. */
  readonly valid: boolean | 'unknown';
  readonly operations: number;
  /** Partitions checked (one when the model has none). */
  readonly partitions: number;
  /**
   * When not linearizable: the partition that is not; the longest prefix the search could linearize
   * (in the order it took effect); the operation it could not get past; and the operations concurrent
   * with that one which were not in the prefix — the ones to look at.
   */
  readonly counterexample?: {
    readonly partition: string;
    readonly linearized: readonly Operation[];
    readonly stuckAt: Operation;
    readonly concurrent: readonly Operation[];
  };
}

interface Entry {
  readonly call: boolean;
  readonly op: Operation;
  readonly index: number;
  match: Entry | undefined;
  prev: Entry | undefined;
  next: Entry | undefined;
}

interface Frame<S> {
  readonly entry: Entry;
  readonly state: S;
  readonly candidates: readonly S[];
  readonly tried: number;
}

/**
 * Linearizability of a history against a model: is there an order of its operations, each taking
 * effect at one instant between its call and its return, that the model allows? The search is Wing &
 * Gong's with Lowe's memoization of (operations linearized, state), as Porcupine and Knossos do:
 * exponential at worst, seconds for the histories tests record. An operation of unknown outcome may
 * take effect at any point after its call, or never.
 */
export function checkLinearizable<S>(
  operations: readonly Operation[],
  model: Model<S>,
  options: { timeoutMs?: number } = {},
): LinearizabilityResult {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const parts = new Map<string, Operation[]>();
  for (const op of operations) {
    const part = model.partition?.(op) ?? '';
    let list = parts.get(part);
    if (!list) parts.set(part, (list = []));
    list.push(op);
  }
  // Smallest first, each with a fair share of the time left: one partition whose search explodes
  // must not use up the time another needs to show a violation (any one is enough to answer false).
  const ordered = [...parts].sort((a, b) => a[1].length - b[1].length);
  let unknown = false;
  for (const [i, [partition, ops]] of ordered.entries()) {
    const share = (deadline - Date.now()) / (ordered.length - i);
    const verdict = checkPartition(ops, model, Date.now() + Math.max(0, share));
    if (verdict === 'unknown') unknown = true;
    else if (verdict !== true) {
      const { stuckAt, linearized } = verdict;
      const inPrefix = new Set(linearized);
      const concurrent = ops.filter(
        (op) => op !== stuckAt && !inPrefix.has(op) && op.call < stuckAt.return && stuckAt.call < op.return,
      );
      return {
        valid: false,
        operations: operations.length,
        partitions: parts.size,
        counterexample: { partition, linearized, stuckAt, concurrent },
      };
    }
  }
  return { valid: unknown ? 'unknown' : true, operations: operations.length, partitions: parts.size };
}

/** A failed search: the deepest prefix it linearized and the return it could not get past there. */
interface Stuck {
  readonly stuckAt: Operation;
  readonly linearized: readonly Operation[];
}

/** true, 'unknown' (out of time), or where the search got stuck deepest. */
function checkPartition<S>(
  ops: readonly Operation[],
  model: Model<S>,
  deadline: number,
): true | 'unknown' | Stuck {
  const head = buildEntries(ops);
  const words = Math.ceil(ops.length / 32) || 1;
  const linearized = new Uint32Array(words);
  const seen = new Set<string>();
  const stack: Frame<S>[] = [];
  let state = model.init;
  let entry = head.next;
  let stuck: Stuck | undefined;
  let deepest = -1;
  let steps = 0;
  const memoKey = (candidate: S, index: number) => {
    linearized[index >>> 5]! ^= 1 << (index & 31);
    const key = `${linearized.join(',')}|${model.key(candidate)}`;
    linearized[index >>> 5]! ^= 1 << (index & 31);
    return key;
  };
  /** Tries the candidates of `at` from `from` on; true when one was new and is now taken. */
  const take = (at: Entry, before: S, candidates: readonly S[], from: number): boolean => {
    for (let i = from; i < candidates.length; i++) {
      const candidate = candidates[i] as S;
      const key = memoKey(candidate, at.index);
      if (seen.has(key)) continue;
      seen.add(key);
      stack.push({ entry: at, state: before, candidates, tried: i });
      state = candidate;
      linearized[at.index >>> 5]! |= 1 << (at.index & 31);
      lift(at);
      return true;
    }
    return false;
  };
  while (head.next !== undefined) {
    if (++steps % 4096 === 0 && Date.now() > deadline) return 'unknown';
    if (entry === undefined) return stuck ?? { stuckAt: ops[0]!, linearized: [] }; // cannot happen
    if (entry.call) {
      const candidates = candidatesOf(model, state, entry.op);
      if (take(entry, state, candidates, 0)) entry = head.next;
      else entry = entry.next;
      continue;
    }
    // A return whose operation is not linearized yet: nothing after it can be placed first. Undo.
    if (stack.length > deepest) {
      deepest = stack.length;
      stuck = { stuckAt: entry.op, linearized: stack.map((frame) => frame.entry.op) };
    }
    const top = stack.pop();
    if (!top) return stuck ?? { stuckAt: entry.op, linearized: [] };
    state = top.state;
    linearized[top.entry.index >>> 5]! &= ~(1 << (top.entry.index & 31));
    unlift(top.entry);
    entry = take(top.entry, top.state, top.candidates, top.tried + 1) ? head.next : top.entry.next;
  }
  return true;
}

function candidatesOf<S>(model: Model<S>, state: S, op: Operation): readonly S[] {
  const next = model.step(state, op);
  return op.outcome === 'unknown' ? [...next, state] : next;
}

/** Calls and returns in time order (a call first at equal times: they overlap), as a linked list. */
function buildEntries(ops: readonly Operation[]): Entry {
  const entries: Entry[] = [];
  ops.forEach((op, index) => {
    const call: Entry = { call: true, op, index, match: undefined, prev: undefined, next: undefined };
    const ret: Entry = { call: false, op, index, match: call, prev: undefined, next: undefined };
    call.match = ret;
    entries.push(call, ret);
  });
  const time = (e: Entry) => (e.call ? e.op.call : e.op.return);
  entries.sort((a, b) => {
    const ta = time(a);
    const tb = time(b);
    if (ta !== tb) return ta < tb ? -1 : 1;
    return a.call === b.call ? 0 : a.call ? -1 : 1;
  });
  const head: Entry = {
    call: false,
    op: ops[0]!,
    index: -1,
    match: undefined,
    prev: undefined,
    next: undefined,
  };
  let last = head;
  for (const e of entries) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  return head;
}

/** Takes a call and its return out of the list (the operation is linearized). */
function lift(call: Entry): void {
  call.prev!.next = call.next;
  if (call.next) call.next.prev = call.prev;
  const ret = call.match!;
  ret.prev!.next = ret.next;
  if (ret.next) ret.next.prev = ret.prev;
}

/** Puts them back where they were (in reverse order of lift). */
function unlift(call: Entry): void {
  const ret = call.match!;
  ret.prev!.next = ret;
  if (ret.next) ret.next.prev = ret;
  call.prev!.next = call;
  if (call.next) call.next.prev = call;
}
