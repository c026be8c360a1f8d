import { SessionPool } from '../backend/index.js';
import type { Pool } from './driver.js';
import { PostgresSessionError } from './errors.js';
import { PostgresSession } from './session.js';
import { SQL } from './sql.js';

export interface SessionsOptions {
  readonly pool: Pool;
  readonly scope: 'session' | 'transaction';
  /** Runs once before the first session is used (sequence, pooler check); retried after a failure. */
  readonly prepare: (session: PostgresSession, lockName: string) => Promise<void>;
  /** Background failures (a connection lost, a rollback that failed) go to the client's events. */
  readonly report: (error: unknown) => void;
  /** How often a holding session is asked whether it still answers (0: never), ms. */
  readonly checkMs: number;
}

/**
 * The PostgreSQL backend's pinned sessions (SessionPool): pg's pool, a rollback or unlock-all.sql
 * before a connection that may hold something goes back to it, and the backend pid as the probe.
 */
export class Sessions extends SessionPool<PostgresSession> {
  constructor(private readonly pg: SessionsOptions) {
    super({
      checkMs: pg.checkMs,
      report: pg.report,
      sessionError: (message) => new PostgresSessionError(message),
    });
  }

  get scope(): 'session' | 'transaction' {
    return this.pg.scope;
  }

  protected async connect(id: string, lockName: string): Promise<PostgresSession> {
    const client = await this.pg.pool.connect();
    const session = new PostgresSession(id, client, this.sessionEnded);
    try {
      await this.prepared(() => this.pg.prepare(session, lockName));
    } catch (error) {
      session.detach();
      client.release(error instanceof Error ? error : true);
      throw error;
    }
    return session;
  }

  /**
   * Nothing it holds may reach the pool: end the transaction of scope 'transaction' if one is open
   * (a try that was refused, a wait that failed), or drop the session locks a failed wait may have
   * left (unlock-all.sql). Detached, the connection still needs an 'error' listener until the pool's
   * takes over: pg emits 'error' when the server goes away even with this statement in flight (its
   * failure is reported), and an unheard 'error' event would crash the process (a server restart
   * under a failed wait did).
   */
  protected cleanUp(session: PostgresSession): Promise<unknown> | undefined {
    if (!session.inTransaction && !session.unclean) return undefined;
    const unheard = () => undefined;
    session.client.on('error', unheard);
    return session.client
      .query(session.inTransaction ? 'ROLLBACK' : SQL.unlockAll)
      .finally(() => session.client.off('error', unheard));
  }

  protected giveBack(session: PostgresSession): void {
    session.client.release();
  }

  protected destroy(session: PostgresSession, error: unknown): void {
    session.client.release(error instanceof Error ? error : true);
  }

  /**
   * Any statement proves the session answers; its answer comes from the same backend or the session
   * ends (PostgresSession checks every answer's pid).
   */
  protected async probe(session: PostgresSession): Promise<void> {
    await session.query(SQL.backendPid, [], 'session check');
  }
}
