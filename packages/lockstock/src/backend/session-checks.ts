/** What the health check needs of a database backend's pinned session. */
export interface CheckedSession {
  /** A wait queued on the server: the session is busy in it and is not asked. */
  readonly wait: unknown;
  readonly ended: Error | undefined;
  /** Calls using the session now: while above 0 it is not given back to the pool. */
  users: number;
  /** Runs `fn` after every call queued on the session before. */
  serial<T>(fn: () => Promise<T>): Promise<T>;
  /** Ends the session: every hold it carried is lost, its connection is destroyed. */
  end(error: Error): void;
}

/** What SessionChecks needs from its backend: the sessions, the probe, and what to do after. */
export interface SessionChecksOptions<S extends CheckedSession> {
  /** How often each holding session is asked whether it still answers (0: never), ms. */
  readonly checkMs: number;
  /** The sessions to ask (those of the client, held or idle; waiting ones are passed over). */
  readonly sessions: ReadonlyMap<string, S>;
  /** One statement on the session; rejects when the answer is wrong (another server session). */
  readonly probe: (session: S) => Promise<void>;
  /** The backend's session error, with `message` (a session that did not answer within `checkMs`). */
  readonly sessionError: (message: string) => Error;
  /** The check is over: the session may be given back to the pool if nothing else needs it. */
  readonly settle: (session: S) => void;
}

/**
 * Finds pinned sessions whose connection silently stopped answering. A socket reports a session the
 * server ended (killed, crashed, restarted) at once; one that stops answering (a partition, a paused
 * or hung server: nothing closes the socket) is found only by asking: every `checkMs` each holding
 * session runs one statement, which must answer within `checkMs`, else the session is ended (its holds
 * lost, its connection destroyed, so the server frees the locks once it notices). One timer for all
 * sessions of a client, stopped while it has none. A waiting session is busy in its blocking wait and
 * is not asked (the wait's time slice bounds it).
 */
export class SessionChecks<S extends CheckedSession> {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: SessionChecksOptions<S>) {}

  /** Starts the timer if it is not running (a session was opened). */
  start(): void {
    const { checkMs } = this.options;
    if (checkMs === 0 || this.timer !== undefined) return;
    this.timer = setInterval(() => {
      const { sessions } = this.options;
      if (sessions.size === 0) return this.stop();
      for (const session of sessions.values()) {
        if (session.wait === undefined && !session.ended) this.check(session, checkMs);
      }
    }, checkMs);
    this.timer.unref();
  }

  /** Stops the timer (the client closes; also when no session is left: start() runs it again). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private check(session: S, timeoutMs: number): void {
    let timer: NodeJS.Timeout | undefined;
    const silence = () =>
      this.options.sessionError(`the connection carrying the hold did not answer within ${timeoutMs} ms`);
    const unanswered = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(silence()), timeoutMs);
      timer.unref();
    });
    session.users++; // not given back to the pool under the check's feet
    const answered = session.serial(async () => {
      if (!session.ended) await this.options.probe(session);
    });
    Promise.race([answered, unanswered])
      .then(
        () => undefined,
        (error: unknown) => session.end(error instanceof Error ? error : silence()),
      )
      .finally(() => {
        clearTimeout(timer);
        session.users--;
        this.options.settle(session);
      });
  }
}
