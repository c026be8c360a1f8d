import type { Pool } from './driver.js';
import type { Sessions } from './sessions.js';

/** What every PostgreSQL resource of one lock client shares. */
export interface PostgresLockContext {
  readonly pool: Pool;
  readonly sessions: Sessions;
  /** The fencing-token sequence, server-quoted (`schema.name`); known once the first session is ready. */
  sequence(): string;
  /** How long one server-side wait lasts before the waiter queues again (lock_timeout), ms. */
  readonly waitSliceMs: number;
  /** Background failures go to the client's `connectionError` event. */
  readonly report: (error: unknown) => void;
}
