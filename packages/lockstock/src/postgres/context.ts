import type { Pool } from './driver.js';
import type { DeadlockDetector } from './deadlocks.js';
import type { Sessions } from './sessions.js';

/** What every PostgreSQL resource of one lock client shares. */
export interface PostgresLockContext {
  readonly pool: Pool;
  readonly sessions: Sessions;
  /** The fencing-token sequence, server-quoted (`schema.name`); known once the first session is ready. */
  sequence(): string;
  /** How long one server-side wait lasts before the waiter queues again (lock_timeout), ms. */
  readonly waitSliceMs: number;
  /** Finds cycles of owners waiting for each other's locks (deadlocks.ts). */
  readonly deadlocks: DeadlockDetector;
  /** Background failures go to the client's `connectionError` event. */
  readonly report: (error: unknown) => void;
}
