import { ServerWait } from '../backend/index.js';
import type { Mode, PinnedSession } from './session.js';

export interface WaitHooks {
  /** Cancels the server-side wait of backend `pid` if it still waits; true if it did. */
  cancel(pid: number): Promise<boolean>;
  /** Gives back a lock the wait obtained after its waiter had left. */
  giveBack(wait: BlockingWait): Promise<void>;
  /** The wait is over (granted and taken, or failed): the session may be given back. */
  settled(wait: BlockingWait): void;
  report(error: unknown): void;
}

/**
 * A waiter queued in PostgreSQL's own lock queue: a blocking pg_advisory_lock on the owner's pinned
 * session (wait-lock.sql), which draws the fencing token with the grant; its lock_timeout is the
 * wait's time slice, and a cancel is pg_cancel_backend from the pool (cancel-wait.sql). The protocol
 * (adopting a wait, cancelling it, giving back a late grant) is ServerWait's, shared with MySQL.
 */
export class BlockingWait extends ServerWait<PinnedSession> {
  constructor(
    session: PinnedSession,
    readonly mode: Mode,
    query: Promise<Array<{ token: string | number }>>,
    hooks: WaitHooks,
  ) {
    super(
      session,
      query.then(() => true),
      {
        ...hooks,
        drawToken: async () => Number((await query)[0]?.token),
        // No backend pid known yet: no statement of this session reached the server to cancel.
        cancel: async () => session.serverPid === undefined || hooks.cancel(session.serverPid),
      },
    );
  }
}
