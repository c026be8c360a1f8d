import { PinnedSession, ServerWait, type ConnectionEvents } from '../backend/index.js';
import type { PoolClient } from './driver.js';
import { endsSession, PostgresSessionError, sqlState, TransactionPoolerError } from './errors.js';
import { PREPARED } from './sql.js';

export type Mode = 'exclusive' | 'shared';

/**
 * Each pooled connection's own application_name (pg_settings' reset_val), learned from its first
 * unlock (unlock.sql): later unlocks set it back from here (unlock-labelled.sql) instead of reading
 * pg_settings each time. A connection's reset value does not change while it lives.
 */
const ownLabels = new WeakMap<PoolClient, string>();

/**
 * An owner's pinned session (see PinnedSession) holding PostgreSQL advisory locks: re-entry is counted
 * here — the server holds each mode once per session — and the tokens the owner holds are kept for
 * it. pg reports a server-side end (pg_terminate_backend, a crash, a dropped socket) as an 'error' on
 * an idle client at once, without a query. Every answer carrying a `pid` must come from the server
 * backend the first one came from (a pooler that moved the session would otherwise go unnoticed).
 */
export class PostgresSession extends PinnedSession<BlockingWait> {
  /** No new work: a failed statement aborted its transaction (scope 'transaction'). */
  poisoned = false;
  /** The open transaction of scope 'transaction' (BEGIN sent, neither COMMIT nor ROLLBACK yet). */
  inTransaction = false;
  /** The server backend, from the first answer: every later answer must come from the same one. */
  private pid: number | undefined;
  readonly holds: Record<Mode, number> = { exclusive: 0, shared: 0 };
  readonly tokens: Record<Mode, number> = { exclusive: 0, shared: 0 };
  /** The permit a semaphore owner holds. */
  permit: { readonly key: bigint; readonly token: number } | undefined;

  constructor(
    id: string,
    readonly client: PoolClient,
    onEnded: (session: PinnedSession, error: Error) => void,
  ) {
    super(id, client as unknown as ConnectionEvents, onEnded);
  }

  get serverPid(): number | undefined {
    return this.pid;
  }

  /** The connection's own application_name, once an unlock on it returned it (ownLabels). */
  get ownLabel(): string | undefined {
    return ownLabels.get(this.client);
  }

  set ownLabel(label: string) {
    ownLabels.set(this.client, label);
  }

  override get usable(): boolean {
    return super.usable && !this.poisoned;
  }

  protected get holding(): boolean {
    return this.holds.exclusive > 0 || this.holds.shared > 0 || this.permit !== undefined;
  }

  protected sessionError(message: string, cause?: unknown): Error {
    return new PostgresSessionError(message, { cause });
  }

  /**
   * A statement on the pinned connection. Answers carrying `pid` must come from the backend the first
   * one came from: a pooler that moved the session to another server connection would otherwise go
   * unnoticed (the holds are then not where they were taken).
   */
  async query<R extends object>(text: string, values: unknown[], lockName: string): Promise<R[]> {
    let rows: unknown[];
    try {
      ({ rows } = await this.run(text, values));
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

  /**
   * A statement of PREPARED as its named statement (sql.ts: only scope 'session' runs them). One the
   * server no longer has — `DEALLOCATE ALL` or `DISCARD ALL` run by someone else on a caller's pooled
   * connection — is refused at its bind, before it runs (SQLSTATE 26000): pg forgets it and the
   * statement is prepared again once.
   */
  private run(text: string, values: unknown[]) {
    const name = PREPARED.get(text);
    if (name === undefined) return this.client.query(text, values);
    return this.client.query({ name, text, values }).catch((error: unknown) => {
      if (sqlState(error) !== '26000') throw error;
      const parsed = (
        this.client as unknown as { connection?: { parsedStatements?: Record<string, string> } }
      ).connection?.parsedStatements;
      if (parsed?.[name] === undefined) throw error;
      delete parsed[name];
      return this.client.query({ name, text, values });
    });
  }
}

export interface WaitHooks {
  /** Cancels the server-side wait of backend `pid` if it still waits; true if it did. */
  cancel(pid: number): Promise<boolean>;
  /** Gives back a lock the wait obtained after its waiter had left. */
  giveBack(wait: BlockingWait): Promise<void>;
  /** The wait is over (granted and taken, or failed): the session may be given back. */
  settled(wait: BlockingWait): void;
  report(error: unknown): void;
}

/**
 * A waiter queued in PostgreSQL's own lock queue: a blocking pg_advisory_lock on the owner's pinned
 * session (wait-lock.sql), which draws the fencing token with the grant; its lock_timeout is the
 * wait's time slice, and a cancel is pg_cancel_backend from the pool (cancel-wait.sql). The protocol
 * (adopting a wait, cancelling it, giving back a late grant) is ServerWait's, shared with MySQL. (In
 * the session's module: each names the other.)
 */
export class BlockingWait extends ServerWait<PostgresSession> {
  constructor(
    session: PostgresSession,
    readonly mode: Mode,
    query: Promise<Array<{ token: string | number }>>,
    hooks: WaitHooks,
  ) {
    super(
      session,
      query.then(() => true),
      {
        ...hooks,
        drawToken: async () => Number((await query)[0]?.token),
        // No backend pid known yet: no statement of this session reached the server to cancel.
        cancel: async () => session.serverPid === undefined || hooks.cancel(session.serverPid),
      },
    );
  }
}
