/**
 * `lockstock/backend` — the backend SPI: what a store must offer for lockstock's lock family to run on
 * it. Implement `LockBackend` (client level: factories per family, capabilities, wake-ups, an optional
 * session) and one `LockResource` per lock (attempt, release, extend, inspect, leave), then make a
 * client with `new LockClientBase(host => new MyBackend(host))`: the generic client brings the wait
 * loop, the watchdog, handles, signals, events, run(), adopt(), multi-locks and the cache. See
 * docs/backend.md for a complete, tested example.
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
export { clockDriftMs, monotonicNow } from '../locks/core/lease.js';
export { validateOwner } from '../locks/options.js';
export {
  BackendUnreachableError,
  LockBackendError,
  UnsupportedLockKindError,
  type LockLostReason,
} from '../locks/errors.js';
