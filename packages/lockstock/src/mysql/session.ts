import type { LockLostReason } from '../backend/index.js';
import type { PoolConnection, ResultSetHeader, RowDataPacket } from './driver.js';
import { endsSession, MySqlSessionError } from './errors.js';
import type { BlockingWait } from './wait.js';

/** The core (callback) connection under mysql2's promise wrapper: its events are the socket's. */
interface CoreConnection {
  readonly threadId: number | null;
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
  off(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
}

/**
 * One server session pinned to one owner of one lock: a connection checked out of the pool for as
 * long as the owner holds the lock or waits for it (GET_LOCK's locks belong to the session, so an
 * owner's hold must live in its own). Re-entry is counted here — the server is asked once per
 * session — and the token of the hold is kept for it.
 *
 * The session watches its connection: mysql2 reports a connection the server ended (KILL, a crash, a
 * restart, a dropped socket) as `'end'` and `'error'` at once, without a query. Then `lost` settles
 * and the hold it carried is lost (the core aborts its signal), and the connection is destroyed.
 */
export class PinnedSession {
  /** Settles once the session ends while in use: the hold it carried is lost. */
  readonly lost: Promise<LockLostReason>;
  /** Why it can carry no more holds (it ended), undefined while it can. */
  ended: Error | undefined;
  /** A wait of it failed: it may hold a lock granted just before (release-all.sql). */
  unclean = false;
  /** Given back to the pool: nothing may use its connection any more. */
  givenBack = false;
  /** Holds of its lock (re-entry counted here) and the token they share. */
  holds = 0;
  token = 0;
  /** The permit a semaphore owner holds (its server-side name). */
  permit: string | undefined;
  /** Calls using it now (attempts, releases): it is not given back meanwhile. */
  users = 0;
  /** A wait of this owner's queued on the server (see BlockingWait). */
  wait: BlockingWait | undefined;
  /** The server's connection id, fixed for the connection's life (KILL takes it). */
  readonly connectionId: number;
  private resolveLost!: (reason: LockLostReason) => void;
  private tail: Promise<unknown> = Promise.resolve();
  /** Ends the statements running now when the session ends (see guard). */
  private readonly running = new Set<(error: Error) => void>();
  private readonly core: CoreConnection;
  private readonly onError = (error?: Error) =>
    this.end(
      new MySqlSessionError(`the connection carrying the hold ended: ${error?.message ?? 'closed'}`, {
        cause: error,
      }),
    );
  private readonly onEnd = () => this.end(new MySqlSessionError('the connection carrying the hold ended'));

  constructor(
    readonly id: string,
    readonly connection: PoolConnection,
    /** Told once when the session ends (the registry drops it and destroys the connection). */
    private readonly onEnded: (session: PinnedSession, error: Error) => void,
  ) {
    this.lost = new Promise((resolve) => (this.resolveLost = resolve));
    this.core = (connection as unknown as { connection: CoreConnection }).connection;
    this.connectionId = this.core.threadId ?? connection.threadId;
    this.core.on('error', this.onError);
    this.core.on('end', this.onEnd);
  }

  /** Whether it carries anything that must keep it out of the pool. */
  get busy(): boolean {
    return this.users > 0 || this.holds > 0 || this.permit !== undefined || this.wait !== undefined;
  }

  /** Runs `fn` after every call queued before it: one owner's calls never interleave. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.catch(() => undefined);
    return run;
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

  /** Ends it: the hold it carried is lost. Idempotent. */
  end(error: Error): void {
    if (this.ended) return;
    this.ended = error;
    for (const stop of this.running) stop(error);
    this.resolveLost('session_lost');
    this.onEnded(this, error);
  }

  /** Stops watching the connection (it goes back to the pool or is destroyed). */
  detach(): void {
    this.core.off('error', this.onError);
    this.core.off('end', this.onEnd);
  }
}
