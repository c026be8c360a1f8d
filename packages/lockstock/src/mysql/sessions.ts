import { SessionPool } from '../backend/index.js';
import type { Pool } from './driver.js';
import { MySqlSessionError } from './errors.js';
import { MySqlSession } from './session.js';
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
 * The MySQL backend's pinned sessions (SessionPool): mysql2's pool, release-all.sql before a
 * connection a failed wait may have left holding a user lock goes back to it, and the connection id
 * as the probe.
 */
export class Sessions extends SessionPool<MySqlSession> {
  constructor(private readonly mysql: SessionsOptions) {
    super({
      checkMs: mysql.checkMs,
      report: mysql.report,
      sessionError: (message) => new MySqlSessionError(message),
    });
  }

  /** Resolves once the server is prepared (the fencing table and sequence); a failure is retried by the next call. */
  ready(): Promise<void> {
    return this.prepared(this.mysql.prepare);
  }

  protected async connect(id: string): Promise<MySqlSession> {
    await this.ready();
    const connection = await this.mysql.pool.getConnection();
    return new MySqlSession(id, connection, this.sessionEnded);
  }

  protected cleanUp(session: MySqlSession): Promise<unknown> | undefined {
    return session.unclean ? session.connection.query(SQL.releaseAll) : undefined;
  }

  protected giveBack(session: MySqlSession): void {
    session.connection.release();
  }

  protected destroy(session: MySqlSession): void {
    session.connection.destroy();
  }

  protected async probe(session: MySqlSession): Promise<void> {
    const [row] = await session.rows<{ id: number | string }>(SQL.connectionId);
    if (Number(row?.id) !== session.connectionId) {
      throw new MySqlSessionError(
        `the connection carrying the hold is now server connection ${row?.id}, not ${session.connectionId}`,
      );
    }
  }
}
