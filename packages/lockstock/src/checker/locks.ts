import { holdsOf, overlaps } from './exclusion.js';
import { fenceSafety } from './fence.js';
import { fifoOrder } from './fifo.js';
import type { HistoryEvent } from './history.js';
import { isKill } from './lock-events.js';
import type { LockCheckOptions, LockCheckReport } from './lock-report.js';
import { grantsWithin } from './liveness.js';
import { releaseOwnership } from './ownership.js';
import { tokenOrder } from './tokens.js';

export type {
  FenceViolation,
  FifoViolation,
  LivenessViolation,
  LockCheckOptions,
  LockCheckReport,
  Overlap,
  ReleaseViolation,
} from './lock-report.js';

/**
 * Direct checks of a lock history (the shape of RELIABILITY.md §4): what clients believed they held,
 * the tokens the lock service handed out, and what the fenced resource accepted. Linear sweeps, so
 * they scale to any history a test records; `checkLinearizable` answers the stronger question. One
 * module per rule: exclusion.ts (L1/L5), ownership.ts (L2), tokens.ts (L3), fence.ts (L4), fifo.ts
 * (L6), liveness.ts (L7); the report's shape in lock-report.ts.
 *
 * Client events: `acquire` (`ok` with `owner`, `token`, optional `valid_until`; `mode` on the invoke:
 * 'x' exclusive (default), 'r'/'w' read-write, 'p' a permit of `permits`), `release` (its invoke ends
 * the hold: Maelstrom's rule), `lost` (`ok`: the client learned it lost the hold). Resource events
 * (`src: 'resource'`): `write` answered `ok` (accepted) or `fail` with `error: 'fence'`, with the
 * writer's `token` and `owner`, per resource `res`. Harness events (`src: 'harness'`): a fault
 * `{ f: 'fault', fault: 'kill', target: proc }` (SIGKILL) ends every hold of `target` then — a dead
 * process acts no more (RELIABILITY.md §4.2 L1: process death ends the interval).
 *
 * A waiter's place in a fair lock's queue, once known, is `{ f: 'queued', type: 'ok', proc, lock }`
 * recorded while its acquire is pending: by the waiter when the store acknowledged its enqueue, or by
 * an observer that saw it in the store's queue (never before the enqueue happened). Where an observer
 * of the store sees its grants, `{ f: 'offered', type: 'ok', proc, lock }` (recorded while the acquire
 * is pending, never before the store granted) says the store gave the waiter the lock then: its place
 * ends there even if the grant never reached it as a hold (a reply lost, or answered after its lease
 * ran out while the client was paused) and it queues again.
 */

/**
 * Runs every lock check; `strict` ignores `valid_until` (how long clients actually acted); `fair`
 * and `grantWithinNs` turn on the FIFO and liveness checks.
 */
export function checkLockHistory(
  events: readonly HistoryEvent[],
  options: LockCheckOptions = {},
): LockCheckReport {
  const client = events.filter(
    (e) => (e.src !== 'resource' && e.src !== 'harness') || (e.src === 'harness' && isKill(e)),
  );
  const { holds, indeterminate } = holdsOf(client, events, options.strict ?? false);
  const exclusion = overlaps(holds);
  const tokens = tokenOrder(client, events);
  const fence = fenceSafety(events);
  const ownership = releaseOwnership(client, events);
  const fair = options.fair ?? false;
  const fifo = fair === false ? [] : fifoOrder(client, events, fair);
  const bound = options.grantWithinNs === undefined ? undefined : BigInt(options.grantWithinNs);
  const liveness = bound === undefined ? [] : grantsWithin(client, events, bound);
  const valid =
    exclusion.length === 0 &&
    tokens.length === 0 &&
    fence.violations.length === 0 &&
    ownership.length === 0 &&
    fifo.length === 0 &&
    liveness.length === 0;
  return {
    valid,
    checks: {
      exclusion: { valid: exclusion.length === 0, violations: exclusion },
      tokens: { valid: tokens.length === 0, violations: tokens },
      fence: { valid: fence.violations.length === 0, ...fence },
      ownership: { valid: ownership.length === 0, violations: ownership },
      fifo: { valid: fifo.length === 0, checked: fair !== false, violations: fifo },
      liveness: {
        valid: liveness.length === 0,
        boundNs: bound === undefined ? undefined : String(bound),
        violations: liveness,
      },
    },
    indeterminateAcquires: indeterminate,
  };
}
