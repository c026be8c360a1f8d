import { SessionChecks } from '../backend/index.js';
import type { Pool } from './driver.js';
import { PostgresSessionError } from './errors.js';
import { PinnedSession } from './session.js';
import { SQL } from './sql.js';

export interface SessionsOptions {
  readonly pool: Pool;
  readonly scope: 'session' | 'transaction';
  /** Runs once before the first session is used (sequence, pooler check); retried after a failure. */
  readonly prepare: (session: PinnedSession, lockName: string) => Promise<void>;
  /** Background failures (a connection lost, a rollback that failed) go to the client's events. */
  readonly report: (error: unknown) => void;
  /** How often a holding session is asked whether it still answers (0: never), ms. */
  readonly checkMs: number;
}

/**
 * The pinned sessions of one lock client, by owner and lock (see PinnedSession): a session is checked
 * out of the pool when an owner first tries a lock and given back as soon as it holds and waits for
 * nothing — so an owner costs one connection per lock it holds or waits for, and none otherwise.
 * Sessions that end are dropped at once and their connections destroyed (never pooled again).
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
      // Any statement proves the session answers; its answer comes from the same backend or the
      // session ends (PinnedSession checks every answer's pid).
      probe: async (session) => {
        await session.query(SQL.backendPid, [], 'session check');
      },
      sessionError: (message) => new PostgresSessionError(message),
      settle: (session) => this.settle(session),
    });
  }

  get scope(): 'session' | 'transaction' {
    return this.options.scope;
  }

  /** The live session of `id`, if there is one (no connection is made). */
  peek(id: string): PinnedSession | undefined {
    const session = this.sessions.get(id);
    return session && !session.ended && !session.poisoned ? session : undefined;
  }

  /**
   * Runs `fn` in the session of `id` (made if there is none), after the calls queued on it before;
   * the session is given back to the pool afterwards if it holds and waits for nothing.
   */
  async use<T>(id: string, lockName: string, fn: (session: PinnedSession) => Promise<T>): Promise<T> {
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
   * Gives a session back to the pool once nothing needs it — after rolling back the transaction of
   * scope 'transaction' if one is open (a try that was refused, a wait that failed), or dropping the
   * session locks a failed wait may have left (unlock-all.sql). Ended sessions were destroyed already.
   */
  settle(session: PinnedSession): void {
    if (session.ended || session.busy) return;
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    session.detach();
    session.givenBack = true;
    if (!session.inTransaction && !session.unclean) {
      session.client.release();
      return;
    }
    // Nothing it holds may reach the pool: end the transaction, or drop stray session locks. Detached,
    // the connection still needs an 'error' listener until the pool's takes over: pg emits 'error' when
    // the server goes away even with this statement in flight (its failure is reported below), and an
    // unheard 'error' event would crash the process (a server restart under a failed wait did).
    const unheard = () => undefined;
    session.client.on('error', unheard);
    session.client.query(session.inTransaction ? 'ROLLBACK' : SQL.unlockAll).then(
      () => {
        session.client.off('error', unheard);
        session.client.release();
      },
      (error: unknown) => {
        session.client.off('error', unheard);
        this.options.report(error);
        session.client.release(error instanceof Error ? error : true);
      },
    );
  }

  /** Ends every session (their holds are lost) and destroys their connections. */
  closeAll(): void {
    this.closed = true;
    this.checks.stop();
    for (const session of [...this.sessions.values()]) {
      session.end(new Error('the lock client was closed'));
    }
  }

  private async open(id: string, lockName: string): Promise<PinnedSession> {
    if (this.closed) throw new Error('the lock client was closed');
    const client = await this.options.pool.connect();
    const session = new PinnedSession(id, client, (ended, error) => this.ended(ended, error));
    try {
      this.ready ??= this.options.prepare(session, lockName).catch((error: unknown) => {
        this.ready = undefined; // try again with the next session
        throw error;
      });
      await this.ready;
    } catch (error) {
      session.detach();
      client.release(error instanceof Error ? error : true);
      throw error;
    }
    // Another call may have opened one for the same id meanwhile: one session per owner and lock.
    const raced = this.peek(id);
    if (raced) {
      session.detach();
      client.release();
      return raced;
    }
    this.sessions.set(id, session);
    this.checks.start();
    return session;
  }

  private ended(session: PinnedSession, error: Error): void {
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    if (session.givenBack) return; // the pool's connection now, no longer ours to destroy
    session.detach();
    // A connection whose session ended (or is no longer trusted) is never pooled again.
    session.client.release(error);
    if (!this.closed) this.options.report(error);
  }
}
