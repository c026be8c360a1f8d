/**
 * lockstock — distributed locks and flash-sale inventory that never oversell.
 * The root export is the lock toolkit; `lockstock/servers` starts real servers for tests.
 */
export { RedisLockClient, type RedisLockClientOptions } from './locks/redis/client.js';
export type {
  AcquireOptions,
  CriticalSection,
  Lock,
  LockClientEvents,
  LockHandle,
  LockLostEvent,
  ReentrantLock,
  ReleaseOutcome,
  RenewalFailedEvent,
  RenewedEvent,
  RunOptions,
} from './locks/types.js';
export {
  InvalidLockOptionError,
  LockAbortedError,
  LockClientClosedError,
  LockError,
  LockLostError,
  LockTimeoutError,
  NotLockOwnerError,
  type LockLostReason,
} from './locks/errors.js';
export type { RedisClient, RedisSource } from './redis/connection.js';
export type { Fence, FencedClaim, FencedStore } from './locks/fencing/fence.js';
export { RedisFencedStore } from './locks/fencing/redis-fenced-store.js';
export { PostgresFencedStore, type Queryable } from './locks/fencing/postgres-fenced-store.js';
