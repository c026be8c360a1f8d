import { PinnedSession, ServerWait, type ConnectionEvents } from '../backend/index.js';
import type { PoolConnection, ResultSetHeader, RowDataPacket } from './driver.js';
import { endsSession, MySqlSessionError } from './errors.js';

/** The core (callback) connection under mysql2's promise wrapper: its events are the socket's. */
interface CoreConnection extends ConnectionEvents {
  readonly threadId: number | null;
}

/**
 * An owner's pinned session (see PinnedSession) holding a MySQL user lock (GET_LOCK): re-entry is
 * counted here — the server is asked once per session — and the token of the hold is kept for it.
 * mysql2 reports a connection the server ended (KILL, a crash, a restart, a dropped socket) as 'end'
 * and 'error' at once, without a query; every statement it runs also settles when the session ends.
 */
export class MySqlSession extends PinnedSession<BlockingWait> {
  /** Holds of its lock (re-entry counted here) and the token they share. */
  holds = 0;
  token = 0;
  /** The permit a semaphore owner holds (its server-side name). */
  permit: string | undefined;
  /** The server's connection id, fixed for the connection's life (KILL takes it). */
  readonly connectionId: number;
  /** Ends the statements running now when the session ends (see guard). */
  private readonly running = new Set<(error: Error) => void>();

  constructor(
    id: string,
    readonly connection: PoolConnection,
    onEnded: (session: PinnedSession, error: Error) => void,
  ) {
    const core = (connection as unknown as { connection: CoreConnection }).connection;
    super(id, core, onEnded);
    this.connectionId = core.threadId ?? connection.threadId;
  }

  protected get holding(): boolean {
    return this.holds > 0 || this.permit !== undefined;
  }

  protected sessionError(message: string, cause?: unknown): Error {
    return new MySqlSessionError(message, { cause });
  }

  /** A SELECT on the pinned connection; a failure that ends the connection ends the session. */
  async rows<R>(sql: string, values: unknown[] = []): Promise<R[]> {
    const [rows] = await this.guard(this.connection.query<RowDataPacket[]>(sql, values));
    return rows as R[];
  }

  /** A write on the pinned connection: its OK packet (affected rows, insert id). */
  async write(sql: string, values: unknown[]): Promise<ResultSetHeader> {
    const [header] = await this.guard(this.connection.query<ResultSetHeader>(sql, values));
    return header;
  }

  /** Ends it: the hold it carried is lost, and the statements running on it settle. Idempotent. */
  override end(error: Error): void {
    if (this.ended) return;
    for (const stop of this.running) stop(error);
    super.end(error);
  }

  /**
   * Awaits a statement of the session's connection. The session's end settles it too: a statement
   * written just as the server killed the connection can stay unanswered by mysql2 for good (the
   * server's "connection killed" packet is taken as the end of the connection, not as the answer).
   */
  private async guard<T>(query: Promise<T>): Promise<T> {
    let stop!: (error: Error) => void;
    const stopped = new Promise<never>((_, reject) => (stop = reject));
    this.running.add(stop);
    try {
      return await Promise.race([query, stopped]);
    } catch (error) {
      // The statement failed because the connection is gone: the socket's own report may come a
      // moment later — the hold is lost now.
      if (endsSession(error)) {
        this.end(
          new MySqlSessionError(`the connection carrying the hold ended: ${(error as Error).message}`, {
            cause: error,
          }),
        );
      }
      throw error;
    } finally {
      this.running.delete(stop);
    }
  }
}

export interface WaitHooks {
  /** Cancels the server-side wait of connection `id` if it still waits; true if it did. */
  cancel(connectionId: number): Promise<boolean>;
  /** Draws the fencing token of the lock the wait was granted (draw-token.sql). */
  drawToken(session: MySqlSession): Promise<number>;
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
 * late grant) is ServerWait's, shared with PostgreSQL. (In the session's module: each names the other.)
 */
export class BlockingWait extends ServerWait<MySqlSession> {
  constructor(
    session: MySqlSession,
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
