/**
 * `lockstock/backend` — the backend SPI: what a store must offer for lockstock's lock family to run on
 * it. Implement `LockBackend` (client level: factories per family, capabilities, wake-ups, an optional
 * session) and one `LockResource` per lock (attempt, release, extend, inspect, leave), then make a
 * client with `new LockClientBase(host => new MyBackend(host))`: the generic client brings the wait
 * loop, the watchdog, handles, signals, events, run(), adopt(), multi-locks, elections and the cache.
 * Everything lockstock's own backends use from the core is exported here (an architecture test keeps
 * it so): elections over a lock, lease arithmetic, option checks, and the server-side waits and
 * session checks of the database backends. See docs/backend.md for a complete, tested example and the
 * duties of a backend.
 *
 * @module lockstock/backend
 */
export {
  Busy,
  Granted,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type HandOffOffer,
  type LatchResource,
  type LockHolder,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
  type SubscribeWakes,
  type Wake,
  type Watch,
} from '../locks/core/backend.js';
export {
  LOCK_FAMILIES,
  type BackendCapabilities,
  type BackendHost,
  type LockBackend,
  type LockFamily,
  type OpenBackend,
} from '../locks/core/spi.js';
export { LockClientBase, type LockClientOptions } from '../locks/core/client.js';
export {
  LockElection,
  MAX_LEADER_VALUE,
  candidateOwner,
  electionOverLock,
  leaderOf,
  proclaimedValue,
  type WatchLeader,
} from '../locks/core/election.js';
export {
  decodeHolder,
  encodeHolder,
  type HolderMetadata,
  type LockHolderInfo,
} from '../locks/core/holder.js';
export { clockDriftMs, monotonicNow, validUntil } from '../locks/core/lease.js';
export {
  resolveAcquireOptions,
  validateLeaseMs,
  validateOwner,
  validatePermits,
  validateWaitMs,
  type HoldBudget,
  type ResolvedAcquireOptions,
} from '../locks/options.js';
export {
  BackendUnreachableError,
  ForeignBackendResultError,
  IncompatibleBackendError,
  LockBackendError,
  LockDeadlockError,
  UnsupportedLockKindError,
  type LockLostReason,
} from '../locks/errors.js';
export { newOwnerId } from '../locks/owner.js';
export { assertFence } from '../locks/fencing/fence.js';
export { SPI_VERSION } from '../support/brand.js';
export { PinnedSession, type ConnectionEvents } from './pinned-session.js';
export { adoptQueuedWait, ServerWait, type ServerWaitHooks } from './server-wait.js';
export { SessionPool, type SessionPoolOptions } from './session-pool.js';
export { SessionChecks, type CheckedSession, type SessionChecksOptions } from './session-checks.js';
