import type { Pool } from './driver.js';
import type { Sessions } from './sessions.js';
import type { PinnedSession } from './session.js';
import type { WaitHooks } from './wait.js';

/** What every MySQL resource of one lock client shares. */
export interface MySqlLockContext {
  /** The pool holds and waits pin their connections from. */
  readonly pool: Pool;
  /** A separate small pool for what must work while every pinned connection waits: cancels, looks. */
  readonly control: Pool;
  readonly sessions: Sessions;
  /** The fencing table's statements, with its quoted name filled in. */
  readonly statements: { readonly tryLock: string; readonly drawToken: string; readonly leader: string };
  /** How long one server-side wait lasts before the waiter queues again, ms. */
  readonly waitSliceMs: number;
  /** Wait hooks for a wait on `serverName` by `owner`. */
  waitHooks(serverName: string, owner: string): WaitHooks;
  /** Takes `serverName` in `session` if it is free, drawing its token; undefined when held elsewhere. */
  tryTake(
    session: PinnedSession,
    serverName: string,
    tokenName: string,
    owner: string,
  ): Promise<number | undefined>;
  /** Background failures go to the client's `connectionError` event. */
  readonly report: (error: unknown) => void;
}
