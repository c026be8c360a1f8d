/**
 * lockstock — distributed locks that never let two holders in (and say so honestly when a lease
 * cannot promise it). The root export is the lock toolkit; `lockstock/redis` the script plumbing;
 * `lockstock/checker` checks recorded histories. (Test servers: the workspace package @lockstock/servers.)
 *
 * @module lockstock
 */
export { RedisLockClient, type RedisLockClientOptions } from './redis/client.js';
export type { ReplicaAcks } from './redis/replicated.js';
export type {
  AcquireOptions,
  AdoptOptions,
  CountDownLatch,
  CriticalSection,
  Election,
  KindName,
  Leader,
  Lock,
  LockClient,
  LockClientEvents,
  LockHandle,
  LockInfo,
  LockLostEvent,
  MultiLockHandle,
  ReadWriteLock,
  ReentrantLock,
  ReleaseOptions,
  ReleaseOutcome,
  RenewalFailedEvent,
  RenewedEvent,
  RunOptions,
  ServerWarningEvent,
  Semaphore,
  SemaphoreOptions,
  Term,
} from './locks/types.js';
export type { LockHolderInfo } from './locks/core/holder.js';
export {
  UnsafeServerError,
  type ServerChecksMode,
  type ServerFinding,
  type ServerFindingSeverity,
  type ServerReport,
} from './locks/server-checks.js';
export { runJob, type Job, type JobOptions, type JobResult } from './locks/job.js';
export {
  ForeignBackendResultError,
  IncompatibleBackendError,
  InvalidLockOptionError,
  LockAbortedError,
  LockBackendError,
  LockClientClosedError,
  LockConnectionError,
  LockDeadlockError,
  LockError,
  LockNotReplicatedError,
  LockHoldBudgetError,
  LockLostError,
  LockTimeoutError,
  LockUpgradeError,
  MultiLockReleaseError,
  PermitsMismatchError,
  NotLockOwnerError,
  UnsupportedLockKindError,
  type LockLostReason,
} from './locks/errors.js';
export {
  LOCK_CHANNELS,
  type AcquireMessage,
  type AcquireOutcome,
  type BudgetMessage,
  type HandoffMessage,
  type HoldMessage,
  type LockMessage,
  type LostMessage,
  type ReleaseMessage,
  type RenewMessage,
} from './locks/core/diagnostics.js';
export type { RedisClient, RedisConnectionOptions, RedisSource } from './redis/connection.js';
export type { Fence, FencedClaim, FencedStore } from './locks/fencing/fence.js';
export { RedisFencedStore } from './redis/fenced-store.js';
export { PostgresFencedStore, type Queryable } from './locks/fencing/postgres-fenced-store.js';
export { RedlockClient, type RedlockClientOptions } from './redis/redlock/client.js';
export { PostgresTokenSource, type FencingTokenSource } from './redis/redlock/token-source.js';
export { QuorumUnavailableError, type Vote } from './redis/redlock/votes.js';
