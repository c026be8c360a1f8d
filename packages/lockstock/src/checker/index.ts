/**
 * `lockstock/checker`: check histories of locks (and of anything with a sequential specification)
 * recorded by tests, harnesses or your own code — JSON Lines in Jepsen's style. No dependencies.
 *
 * - `checkLinearizable(operationsOf(parseHistory(text)), mutexModel({ fenced: true }))`: is there a
 *   real-time-respecting order the model allows? (Wing & Gong with Lowe's memoization, as Porcupine.)
 * - `checkLockHistory(events, { fair, grantWithinNs })`: believed holds never overlap beyond their
 *   mode, tokens grow in real time, the fenced resource accepted only fresh writes, releases that
 *   took effect were their holders'; optionally fair locks grant in known queue order, and a freed
 *   lock reaches a waiter within a bound.
 *
 * @module lockstock/checker
 */
export { formatHistory, HistoryError, operationsOf, parseHistory, UNKNOWN_RETURN } from './history.js';
export type { HistoryEvent, Operation } from './history.js';
export { checkLinearizable, type LinearizabilityResult, type Model } from './linearizable.js';
export {
  checkLockHistory,
  type FenceViolation,
  type FifoViolation,
  type LivenessViolation,
  type LockCheckOptions,
  type LockCheckReport,
  type Overlap,
  type ReleaseViolation,
} from './locks.js';
export {
  keyValueModel,
  mutexModel,
  registerModel,
  semaphoreModel,
  type MutexState,
  type SemaphoreState,
} from './models.js';
