import type { LockLostReason } from '../locks/errors.js';
import type { CheckedSession } from './session-checks.js';

/** The events a pinned session listens to on its connection: the socket's end and its errors. */
export interface ConnectionEvents {
  /** Listens for the connection failing (`error`) or closing (`end`): the session's holds are lost. */
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
  /** Stops listening (the session was given back to the pool). */
  off(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
}

/**
 * One server session pinned to one owner of one lock, for a database whose locks belong to sessions
 * (PostgreSQL's advisory locks, MySQL's user locks): a connection checked out of the pool for as long
 * as the owner holds the lock or waits for it, so that the owner's holds all live in its own session.
 * A backend subclasses it with what its locks keep per session (holds per mode, tokens, a permit) and
 * how it runs statements; SessionPool hands the sessions out and takes them back.
 *
 * The session watches its connection: the drivers report a connection the server ended (terminated,
 * killed, a crash, a dropped socket) as 'end' or 'error' at once, without a statement. Then `lost`
 * settles and every hold it carried is lost (the core aborts their signals), and the pool destroys the
 * connection. `W` is the backend's server-side wait (a ServerWait) queued on the session.
 */
export abstract class PinnedSession<W = unknown> implements CheckedSession {
  /** Settles once the session ends while in use: every hold it carried is lost. */
  readonly lost: Promise<LockLostReason>;
  /** Why it can carry no more holds (it ended), undefined while it can. */
  ended: Error | undefined;
  /** A wait of it failed: it may hold a lock granted just before (cleaned before pooling). */
  unclean = false;
  /** Given back to the pool: nothing may use its connection any more. */
  givenBack = false;
  /** Calls using it now (attempts, releases, checks): it is not given back meanwhile. */
  users = 0;
  /** A wait of this owner's queued in the server's own lock queue. */
  wait: W | undefined;
  private resolveLost!: (reason: LockLostReason) => void;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly onError = (error?: Error) =>
    this.end(
      this.sessionError(`the connection carrying the hold ended: ${error?.message ?? 'closed'}`, error),
    );
  private readonly onEnd = () => this.end(this.sessionError('the connection carrying the hold ended'));

  constructor(
    readonly id: string,
    private readonly events: ConnectionEvents,
    /** Told once when the session ends (the pool drops it and destroys the connection). */
    private readonly onEnded: (session: PinnedSession, error: Error) => void,
  ) {
    this.lost = new Promise((resolve) => (this.resolveLost = resolve));
    events.on('error', this.onError);
    events.on('end', this.onEnd);
  }

  /** The backend's error for a session that ended (its message says why; `cause`, the driver's). */
  protected abstract sessionError(message: string, cause?: unknown): Error;

  /** Whether it holds anything of the server's (a lock, a permit) that keeps it out of the pool. */
  protected abstract get holding(): boolean;

  /** Whether new calls may use it (not ended; a backend may add its own reasons). */
  get usable(): boolean {
    return this.ended === undefined;
  }

  /** Whether it carries anything that must keep it out of the pool. */
  get busy(): boolean {
    return this.users > 0 || this.wait !== undefined || this.holding;
  }

  /** Runs `fn` after every call queued before it: one owner's calls never interleave. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Ends it: every hold it carried is lost. Idempotent. */
  end(error: Error): void {
    if (this.ended) return;
    this.ended = error;
    this.resolveLost('session_lost');
    this.onEnded(this, error);
  }

  /** Stops watching the connection (it goes back to the pool or is destroyed). */
  detach(): void {
    this.events.off('error', this.onError);
    this.events.off('end', this.onEnd);
  }
}
