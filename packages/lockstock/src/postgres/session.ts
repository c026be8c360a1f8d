import type { LockLostReason } from '../backend/index.js';
import type { PoolClient } from './driver.js';
import { endsSession, PostgresSessionError, TransactionPoolerError } from './errors.js';
import type { BlockingWait } from './wait.js';

export type Mode = 'exclusive' | 'shared';

/**
 * One server session pinned to one owner of one lock: a connection checked out of the pool for as
 * long as the owner holds the lock or waits for it (advisory locks belong to sessions, so an owner's
 * holds must all live in its own). Re-entry is counted here — the server holds each mode once per
 * session — and the tokens the owner holds are kept for it.
 *
 * The session watches its connection: pg reports a server-side end (pg_terminate_backend, a crash,
 * a dropped socket) as an 'error' on an idle client at once, without a query. Then `lost` settles and
 * every hold it carried is lost (the core aborts their signals), and the connection is destroyed.
 */
export class PinnedSession {
  /** Settles once the session ends while in use: every hold it carried is lost. */
  readonly lost: Promise<LockLostReason>;
  /** Why it can carry no more holds (it ended), undefined while it can. */
  ended: Error | undefined;
  /** No new work: a failed statement aborted its transaction (scope 'transaction'). */
  poisoned = false;
  /** A wait of it failed: it may hold a lock granted just before (see unlock-all.sql). */
  unclean = false;
  /** Given back to the pool: nothing may use its connection any more. */
  givenBack = false;
  /** The open transaction of scope 'transaction' (BEGIN sent, neither COMMIT nor ROLLBACK yet). */
  inTransaction = false;
  /** The server backend, from the first answer: every later answer must come from the same one. */
  private pid: number | undefined;
  readonly holds: Record<Mode, number> = { exclusive: 0, shared: 0 };
  readonly tokens: Record<Mode, number> = { exclusive: 0, shared: 0 };
  /** The permit a semaphore owner holds. */
  permit: { readonly key: bigint; readonly token: number } | undefined;
  /** Calls using it now (attempts, releases): it is not given back meanwhile. */
  users = 0;
  /** A wait of this owner's queued in PostgreSQL (see BlockingWait). */
  wait: BlockingWait | undefined;
  private resolveLost!: (reason: LockLostReason) => void;
  private tail: Promise<unknown>;
  private readonly onError = (error: Error) =>
    this.end(
      new PostgresSessionError(`the connection carrying the hold ended: ${error.message}`, { cause: error }),
    );
  private readonly onEnd = () => this.end(new PostgresSessionError('the connection carrying the hold ended'));

  constructor(
    readonly id: string,
    readonly client: PoolClient,
    /** Told once when the session ends (the registry drops it and destroys the connection). */
    private readonly onEnded: (session: PinnedSession, error: Error) => void,
  ) {
    this.lost = new Promise((resolve) => (this.resolveLost = resolve));
    this.tail = Promise.resolve();
    client.on('error', this.onError);
    client.on('end', this.onEnd);
  }

  get serverPid(): number | undefined {
    return this.pid;
  }

  /** Whether it carries anything that must keep it out of the pool. */
  get busy(): boolean {
    return (
      this.users > 0 ||
      this.holds.exclusive > 0 ||
      this.holds.shared > 0 ||
      this.permit !== undefined ||
      this.wait !== undefined
    );
  }

  /** Runs `fn` after every call queued before it: one owner's calls never interleave. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /**
   * A statement on the pinned connection. Answers carrying `pid` must come from the backend the first
   * one came from: a pooler that moved the session to another server connection would otherwise go
   * unnoticed (the holds are then not where they were taken).
   */
  async query<R extends object>(text: string, values: unknown[], lockName: string): Promise<R[]> {
    let rows: unknown[];
    try {
      ({ rows } = await this.client.query(text, values));
    } catch (error) {
      // A statement failing because the session is ending (terminated, server shutting down): the
      // socket's own report comes a moment later — the holds are lost now.
      if (endsSession(error)) {
        this.end(
          new PostgresSessionError(`the session carrying the hold ended: ${(error as Error).message}`, {
            cause: error,
          }),
        );
      }
      throw error;
    }
    const pid = (rows[0] as { pid?: unknown } | undefined)?.pid;
    if (typeof pid === 'number') {
      if (this.pid === undefined) this.pid = pid;
      else if (pid !== this.pid) {
        const error = new TransactionPoolerError(
          lockName,
          `one connection was answered by server backend ${this.pid}, then by ${pid}`,
        );
        this.end(error);
        throw error;
      }
    }
    return rows as R[];
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
    this.client.off('error', this.onError);
    this.client.off('end', this.onEnd);
  }
}
