import { ServerWait } from '../backend/index.js';
import type { PinnedSession } from './session.js';

export interface WaitHooks {
  /** Cancels the server-side wait of connection `id` if it still waits; true if it did. */
  cancel(connectionId: number): Promise<boolean>;
  /** Draws the fencing token of the lock the wait was granted (draw-token.sql). */
  drawToken(session: PinnedSession): Promise<number>;
  /** Gives back a lock the wait obtained after its waiter had left. */
  giveBack(wait: BlockingWait): Promise<void>;
  /** The wait is over (granted and taken, or failed): the session may be given back. */
  settled(wait: BlockingWait): void;
  report(error: unknown): void;
}

/**
 * A waiter queued in the server's own queue for a user lock: a blocking GET_LOCK(name, slice) on the
 * owner's pinned session (wait-lock.sql). Once granted it draws its fencing token (a failure leaves
 * the lock taken without one: the wait fails and the session is cleaned before pooling); a cancel is
 * KILL QUERY from a control connection. The protocol (adopting a wait, cancelling it, giving back a
 * late grant) is ServerWait's, shared with PostgreSQL.
 */
export class BlockingWait extends ServerWait<PinnedSession> {
  constructor(
    session: PinnedSession,
    /** The server-side name waited for (a lock, or one permit of a semaphore). */
    readonly serverName: string,
    granted: Promise<boolean>,
    hooks: WaitHooks,
  ) {
    super(session, granted, {
      ...hooks,
      drawToken: () => hooks.drawToken(session),
      cancel: () => hooks.cancel(session.connectionId),
    });
  }
}
