import type { PinnedSession } from './pinned-session.js';
import { SessionChecks } from './session-checks.js';

/** What every SessionPool takes: the health checks' period and error, and where failures go. */
export interface SessionPoolOptions {
  /** How often a holding session is asked whether it still answers (0: never), ms. */
  readonly checkMs: number;
  /** The backend's session error, with `message` (a session that did not answer within `checkMs`). */
  readonly sessionError: (message: string) => Error;
  /** Background failures (a connection lost, a cleanup that failed) go to the client's events. */
  readonly report: (error: unknown) => void;
}

/**
 * The pinned sessions of one lock client, by owner and lock (see PinnedSession): a connection is
 * checked out of the pool when an owner first tries a lock and given back as soon as it holds and
 * waits for nothing — so an owner costs one connection per lock it holds or waits for, and none
 * otherwise. Sessions that end are dropped at once and their connections destroyed (never pooled
 * again); holding sessions are asked now and then whether they still answer (SessionChecks).
 *
 * A database backend subclasses it with its driver's part: how a session is opened (`connect`), what
 * runs on a connection before it may be pooled again (`cleanUp`), how a connection goes back or is
 * destroyed, and the statement that proves a session answers (`probe`).
 */
export abstract class SessionPool<S extends PinnedSession> {
  private readonly sessions = new Map<string, S>();
  private preparation: Promise<void> | undefined;
  private closed = false;
  private readonly checks: SessionChecks<S>;
  /** For the sessions `connect` makes: called once when one ends. */
  protected readonly sessionEnded = (session: PinnedSession, error: Error): void =>
    this.ended(session as S, error);

  constructor(protected readonly options: SessionPoolOptions) {
    this.checks = new SessionChecks({
      checkMs: options.checkMs,
      sessions: this.sessions,
      probe: (session) => this.probe(session),
      sessionError: options.sessionError,
      settle: (session) => this.settle(session),
    });
  }

  /**
   * Checks a connection out of the driver's pool and pins it as the session `id` (made with
   * `sessionEnded` as its end callback), prepared for `lockName`'s statements.
   */
  protected abstract connect(id: string, lockName: string): Promise<S>;
  /**
   * What must run on the connection of a session that holds nothing before it may be pooled again
   * (a rollback, dropping the locks a failed wait may have left), or undefined when nothing must.
   */
  protected abstract cleanUp(session: S): Promise<unknown> | undefined;
  /** Gives a clean session's connection back to the driver's pool. */
  protected abstract giveBack(session: S): void;
  /** Destroys a connection that must never be pooled again (its session ended, its cleanup failed). */
  protected abstract destroy(session: S, error: unknown): void;
  /** One statement on the session; rejects when its answer is wrong (another server session). */
  protected abstract probe(session: S): Promise<void>;

  /** The live session of `id`, if there is one (no connection is made). */
  peek(id: string): S | undefined {
    const session = this.sessions.get(id);
    return session?.usable ? session : undefined;
  }

  /**
   * Runs `fn` in the session of `id` (made if there is none), after the calls queued on it before;
   * the session is given back to the pool afterwards if it holds and waits for nothing.
   */
  async use<T>(id: string, lockName: string, fn: (session: S) => Promise<T>): Promise<T> {
    const session = this.peek(id) ?? (await this.open(id, lockName));
    session.users++;
    try {
      return await session.serial(() => fn(session));
    } finally {
      session.users--;
      this.settle(session);
    }
  }

  /**
   * Gives a session back to the pool once nothing needs it, after its cleanup if it needs one (a
   * cleanup that fails destroys the connection). Ended sessions were destroyed already.
   */
  settle(session: S): void {
    if (session.ended || session.busy) return;
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    session.detach();
    session.givenBack = true;
    const cleaning = this.cleanUp(session);
    if (cleaning === undefined) return this.giveBack(session);
    cleaning.then(
      () => this.giveBack(session),
      (error: unknown) => {
        this.options.report(error);
        this.destroy(session, error);
      },
    );
  }

  /**
   * Runs the server's one-time preparation (a fencing sequence or table) once for every caller at the
   * same time; a failure is retried by the next call.
   */
  prepared(prepare: () => Promise<void>): Promise<void> {
    this.preparation ??= prepare().catch((error: unknown) => {
      this.preparation = undefined;
      throw error;
    });
    return this.preparation;
  }

  /** Ends every session (their holds are lost) and destroys their connections. */
  closeAll(): void {
    this.closed = true;
    this.checks.stop();
    for (const session of [...this.sessions.values()]) session.end(new Error('the lock client was closed'));
  }

  private async open(id: string, lockName: string): Promise<S> {
    if (this.closed) throw new Error('the lock client was closed');
    const session = await this.connect(id, lockName);
    // Another call may have opened one for the same id meanwhile: one session per owner and lock.
    const raced = this.peek(id);
    if (raced) {
      session.detach();
      session.givenBack = true;
      this.giveBack(session);
      return raced;
    }
    this.sessions.set(id, session);
    this.checks.start();
    return session;
  }

  private ended(session: S, error: Error): void {
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    if (session.givenBack) return; // the pool's connection now, no longer ours to destroy
    session.detach();
    // A connection whose session ended (or is no longer trusted) is never pooled again.
    this.destroy(session, error);
    if (!this.closed) this.options.report(error);
  }
}
