import type { Pool } from './driver.js';
import type { Sessions } from './sessions.js';
import type { MySqlSession, WaitHooks } from './session.js';

/** What every MySQL resource of one lock client shares. */
export interface MySqlLockContext {
  /** The pool holds and waits pin their connections from. */
  readonly pool: Pool;
  /** A separate small pool for what must work while every pinned connection waits: cancels, looks. */
  readonly control: Pool;
  readonly sessions: Sessions;
  /** The fencing table's statements that the resources run themselves, with its quoted name. */
  readonly statements: { readonly leader: string };
  /** How long one server-side wait lasts before the waiter queues again, ms. */
  readonly waitSliceMs: number;
  /** Wait hooks for a wait whose grant draws the token of `tokenName` (recording `owner`: elections). */
  waitHooks(tokenName: string, owner: string, record: boolean): WaitHooks;
  /**
   * Takes `serverName` in `session` if it is free, drawing the token of `tokenName` (and recording
   * `owner` as its holder when `record`: elections); undefined when held elsewhere.
   */
  tryTake(
    session: MySqlSession,
    serverName: string,
    tokenName: string,
    owner: string,
    record: boolean,
  ): Promise<number | undefined>;
  /** Background failures go to the client's `connectionError` event. */
  readonly report: (error: unknown) => void;
}
