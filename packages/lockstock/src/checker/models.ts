import type { Operation } from './history.js';
import type { Model } from './linearizable.js';

/**
 * Sequential specifications for `checkLinearizable`. Inputs come from the invocation's event, outputs
 * from the completion's: `value` unless said otherwise. A `fail` completion means the operation had
 * no effect (Jepsen); a model says in which states such an answer is allowed.
 */

const NONE: readonly never[] = [];
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * One register (Jepsen's etcd and Knossos' cas-register): `read` returns the value (null before the
 * first write), `write` sets `value`, `cas` with `value: [from, to]` swaps when the value is `from`
 * (answered ok) and otherwise answers fail.
 */
export function registerModel(): Model<unknown> {
  return {
    name: 'register',
    init: null,
    key: (state) => JSON.stringify(state ?? null),
    step(state, op) {
      switch (op.f) {
        case 'read':
          return op.outcome !== 'ok' || same(op.output?.value, state) ? [state] : NONE;
        case 'write':
          return op.outcome === 'fail' ? [state] : [op.input.value];
        case 'cas': {
          const [from, to] = op.input.value as [unknown, unknown];
          const swaps = same(state, from);
          if (op.outcome === 'ok') return swaps ? [to] : NONE;
          if (op.outcome === 'fail') return swaps ? NONE : [state];
          return swaps ? [to] : NONE; // unknown: it swapped, or (added by the checker) it did nothing
        }
        default:
          return NONE;
      }
    },
  };
}

/**
 * A key-value store of strings (Porcupine's kv test): `get` returns the key's value ('' when never
 * written), `put` sets it, `append` appends to it. Keys are independent: one partition per `key`.
 */
export function keyValueModel(): Model<string> {
  return {
    name: 'key-value',
    init: '',
    key: (state) => state,
    partition: (op) => String(op.input.key),
    step(state, op) {
      const value = String(op.input.value ?? '');
      switch (op.f) {
        case 'get':
          return op.outcome !== 'ok' || String(op.output?.value ?? '') === state ? [state] : NONE;
        case 'put':
          return op.outcome === 'fail' ? [state] : [value];
        case 'append':
          return op.outcome === 'fail' ? [state] : [state + value];
        default:
          return NONE;
      }
    },
  };
}

/** Who holds a lock: the holding process, or null. */
export interface MutexState {
  readonly holder: string | null;
  /** The last fencing token granted (fenced model only). */
  readonly token: bigint;
}

/**
 * A mutex (Knossos' `Mutex`): `acquire` answered ok only while free, then held by its process;
 * `release` answered ok only by the holder. A refused or failed operation changed nothing. With
 * `fenced`, each granted acquire carries `token` (its completion's `token`, or `value`), which must
 * be greater than every token granted before it in the linearization.
 */
export function mutexModel(options: { fenced?: boolean } = {}): Model<MutexState> {
  const fenced = options.fenced ?? false;
  return {
    name: fenced ? 'fenced mutex' : 'mutex',
    init: { holder: null, token: -1n },
    key: (s) => `${s.holder ?? ''}|${fenced ? s.token : ''}`,
    step(state, op) {
      if (op.outcome === 'fail') return [state];
      if (op.f === 'acquire') {
        if (state.holder !== null) return NONE;
        if (!fenced || op.outcome === 'unknown') return [{ holder: op.proc, token: state.token }];
        const token = tokenOf(op);
        return token !== undefined && token > state.token ? [{ holder: op.proc, token }] : NONE;
      }
      if (op.f === 'release') {
        return state.holder === op.proc ? [{ holder: null, token: state.token }] : NONE;
      }
      return NONE;
    },
  };
}

/** Holders of a semaphore, as a sorted list of processes (a process may hold several permits). */
export type SemaphoreState = readonly string[];

/** A semaphore of `permits`: `acquire` answered ok only while fewer hold it; `release` by a holder. */
export function semaphoreModel(permits: number): Model<SemaphoreState> {
  return {
    name: `semaphore(${permits})`,
    init: [],
    key: (holders) => holders.join('\u0000'),
    step(holders, op) {
      if (op.outcome === 'fail') return [holders];
      if (op.f === 'acquire') {
        return holders.length < permits ? [[...holders, op.proc].sort()] : NONE;
      }
      if (op.f === 'release') {
        const at = holders.indexOf(op.proc);
        return at < 0 ? NONE : [[...holders.slice(0, at), ...holders.slice(at + 1)]];
      }
      return NONE;
    },
  };
}

function tokenOf(op: Operation): bigint | undefined {
  const raw = op.output?.token ?? op.output?.value;
  if (typeof raw === 'number' || typeof raw === 'bigint' || (typeof raw === 'string' && /^\d+$/.test(raw))) {
    return BigInt(raw);
  }
  return undefined;
}
