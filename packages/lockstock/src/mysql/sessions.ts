import { SessionChecks } from '../backend/index.js';
import type { Pool } from './driver.js';
import { MySqlSessionError } from './errors.js';
import { PinnedSession } from './session.js';
import { SQL } from './sql.js';

export interface SessionsOptions {
  readonly pool: Pool;
  /** Runs once before the first session is used (the fencing table and sequence); retried after a failure. */
  readonly prepare: () => Promise<void>;
  /** Background failures (a connection lost, a cleanup that failed) go to the client's events. */
  readonly report: (error: unknown) => void;
  /** How often a holding session is asked whether it still answers (0: never), ms. */
  readonly checkMs: number;
}

/**
 * The pinned sessions of one lock client, by owner and lock (see PinnedSession): a connection is
 * checked out of the pool when an owner first tries a lock and given back as soon as it holds and
 * waits for nothing — so an owner costs one connection per lock it holds or waits for, and none
 * otherwise. Sessions that end are dropped at once and their connections destroyed (never pooled).
 */
export class Sessions {
  private readonly sessions = new Map<string, PinnedSession>();
  private ready: Promise<void> | undefined;
  private closed = false;
  private readonly checks: SessionChecks<PinnedSession>;

  constructor(private readonly options: SessionsOptions) {
    this.checks = new SessionChecks({
      checkMs: options.checkMs,
      sessions: this.sessions,
      probe: async (session) => {
        const [row] = await session.rows<{ id: number | string }>(SQL.connectionId);
        if (Number(row?.id) !== session.connectionId) {
          throw new MySqlSessionError(
            `the connection carrying the hold is now server connection ${row?.id}, not ${session.connectionId}`,
          );
        }
      },
      sessionError: (message) => new MySqlSessionError(message),
      settle: (session) => this.settle(session),
    });
  }

  /** The live session of `id`, if there is one (no connection is made). */
  peek(id: string): PinnedSession | undefined {
    const session = this.sessions.get(id);
    return session && !session.ended ? session : undefined;
  }

  /**
   * Runs `fn` in the session of `id` (made if there is none), after the calls queued on it before;
   * the session is given back to the pool afterwards if it holds and waits for nothing.
   */
  async use<T>(id: string, fn: (session: PinnedSession) => Promise<T>): Promise<T> {
    const session = this.peek(id) ?? (await this.open(id));
    session.users++;
    try {
      return await session.serial(() => fn(session));
    } finally {
      session.users--;
      this.settle(session);
    }
  }

  /**
   * Gives a session back to the pool once nothing needs it — after dropping the user lock a failed
   * wait may have left taken (release-all.sql). Ended sessions were destroyed already.
   */
  settle(session: PinnedSession): void {
    if (session.ended || session.busy) return;
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    session.detach();
    session.givenBack = true;
    if (!session.unclean) {
      session.connection.release();
      return;
    }
    session.connection.query(SQL.releaseAll).then(
      () => session.connection.release(),
      (error: unknown) => {
        this.options.report(error);
        session.connection.destroy();
      },
    );
  }

  /** Resolves once the server is prepared (the fencing table and sequence); a failure is retried by the next call. */
  prepared(): Promise<void> {
    this.ready ??= this.options.prepare().catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  /** Ends every session (their holds are lost) and destroys their connections. */
  closeAll(): void {
    this.closed = true;
    this.checks.stop();
    for (const session of [...this.sessions.values()]) session.end(new Error('the lock client was closed'));
  }

  private async open(id: string): Promise<PinnedSession> {
    if (this.closed) throw new Error('the lock client was closed');
    await this.prepared();
    const connection = await this.options.pool.getConnection();
    // Another call may have opened one for the same id meanwhile: one session per owner and lock.
    const raced = this.peek(id);
    if (raced) {
      connection.release();
      return raced;
    }
    const session = new PinnedSession(id, connection, (ended, error) => this.ended(ended, error));
    this.sessions.set(id, session);
    this.checks.start();
    return session;
  }

  private ended(session: PinnedSession, error: Error): void {
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    if (session.givenBack) return; // the pool's connection now, no longer ours to destroy
    session.detach();
    // A connection whose session ended (or is no longer trusted) is never pooled again.
    session.connection.destroy();
    if (!this.closed) this.options.report(error);
  }
}
