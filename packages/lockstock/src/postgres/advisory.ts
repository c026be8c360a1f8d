import {
  adoptQueuedWait,
  Busy,
  Granted,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { LockUpgradeError } from '../locks/errors.js';
import type { PostgresLockContext } from './context.js';
import { sqlState } from './errors.js';
import { ownerLabel } from './deadlocks.js';
import { lockKey } from './keys.js';
import { SCOPE_SQL, SQL } from './sql.js';
import { BlockingWait, type Mode, type PostgresSession } from './session.js';

/** How a family of advisory locks behaves: its mode, re-entry, and how its waiters wait. */
export interface AdvisoryFamily {
  readonly mode: Mode;
  /** The same owner acquiring again adds a hold (without a round trip); otherwise it is refused. */
  readonly reentrant: boolean;
  /** 'queue': waiters wait in PostgreSQL's lock queue; 'backoff': they retry (spin). */
  readonly waits: 'queue' | 'backoff';
  /** Every waiter of every client queues on the server (fair); otherwise one per client (its head). */
  readonly serverOrder: boolean;
  /** The write side of a read-write lock: an owner holding the read side is refused. */
  readonly upgradeRefused: boolean;
}

/**
 * A lock on one advisory-lock key, held by the owner's pinned session (see PostgresSession): mutex,
 * reentrant, fair and spin locks and both sides of a read-write lock (shared advisory locks for the
 * read side) — all of a name on the same key, so they exclude each other as on Redis.
 *
 * Holds have no lease: they last as long as the owner's session, and the grant carries the session's
 * `lost`, so a dropped connection aborts exactly the holds it carried. Re-entry and tokens are kept in
 * the session: the server holds each mode once per session. Waiters queue in PostgreSQL's lock queue
 * (BlockingWait): FIFO, and a reader queues behind a waiting writer.
 */
export class AdvisoryLockResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel = undefined;
  readonly leases = 'none' as const;
  readonly handsOff = false;
  readonly ordering: 'server-order' | undefined;
  private readonly key: bigint;
  private readonly keyText: string;

  constructor(
    private readonly ctx: PostgresLockContext,
    readonly name: string,
    private readonly family: AdvisoryFamily,
  ) {
    this.key = lockKey(name);
    this.keyText = this.key.toString();
    this.waitKey = `pg:${name}`;
    this.ordering = family.serverOrder ? 'server-order' : undefined;
  }

  /** Every family of a name shares one session per owner: a writer may take the read side too. */
  private sessionId(owner: string): string {
    return `${this.keyText}:${owner}`;
  }

  attempt({ owner, waiting }: AttemptRequest): Promise<AttemptResult> {
    return this.ctx.sessions.use(this.sessionId(owner), this.name, (session) =>
      this.attemptIn(session, owner, waiting),
    );
  }

  private async attemptIn(session: PostgresSession, owner: string, waiting: boolean): Promise<AttemptResult> {
    const { mode } = this.family;
    const queued = await adoptQueuedWait(session, waiting, (wait) => wait.mode === mode);
    if (queued instanceof Busy) return queued; // still queued on the server: keep its place
    if (queued) return this.grant(session, queued.token);
    const deadlock = this.ctx.deadlocks.take(session.id);
    if (deadlock) throw deadlock; // its wait was withdrawn (DeadlockDetector)
    if (session.holds[mode] > 0) {
      if (!this.family.reentrant) return new Busy(undefined); // one hold per owner, as on Redis
      return this.grant(session, session.tokens[mode]);
    }
    if (this.family.upgradeRefused && session.holds.shared > 0) throw new LockUpgradeError(this.name, owner);
    const scoped = SCOPE_SQL[this.ctx.sessions.scope];
    if (session.unclean && session.holds.exclusive + session.holds.shared === 0) {
      await session.query(SQL.unlockAll, [], this.name); // before counting holds on it again
      session.unclean = false;
    }
    await this.begin(session);
    const label = ownerLabel(owner);
    const [row] = await session.query<{ token: string | null }>(
      scoped.tryLock,
      [this.keyText, mode === 'shared', this.ctx.sequence(), label],
      this.name,
    );
    if (row?.token != null) return this.grant(session, Number(row.token));
    if (!waiting || this.family.waits === 'backoff') return new Busy(undefined);
    const wait = new BlockingWait(
      session,
      mode,
      session.client
        .query<{ token: string }>(scoped.waitLock, [
          this.keyText,
          mode === 'shared',
          this.ctx.sequence(),
          String(this.ctx.waitSliceMs),
          label,
        ])
        .then((result) => result.rows),
      this.waitHooks(),
    );
    session.wait = wait;
    this.ctx.deadlocks.watch(wait, session.id, this.name, owner, label);
    return new Busy(undefined, wait.watch());
  }

  private grant(session: PostgresSession, token: number): Granted {
    const { mode } = this.family;
    if (session.holds[mode]++ === 0) session.tokens[mode] = token;
    return new Granted(session.tokens[mode], mode === 'shared', session.lost);
  }

  /** Scope 'transaction': every hold lives in a transaction of the session, begun before its first try. */
  private async begin(session: PostgresSession): Promise<void> {
    if (this.ctx.sessions.scope !== 'transaction' || session.inTransaction) return;
    await session.query('BEGIN', [], this.name);
    session.inTransaction = true;
  }

  async release(owner: string): Promise<ReleaseResult> {
    const { mode } = this.family;
    const id = this.sessionId(owner);
    // No session (it ended, or never was): the hold is over already.
    if (!this.ctx.sessions.peek(id)?.holds[mode]) return { outcome: 'expired' };
    return this.ctx.sessions.use(id, this.name, async (session) => {
      if (session.holds[mode] === 0) return { outcome: 'expired' };
      if (--session.holds[mode] > 0) return { outcome: 'still_held' };
      try {
        return { outcome: await this.unlock(session) };
      } catch (error) {
        // The connection went while releasing: the server ended the session, and the lock with it.
        if (session.ended) return { outcome: 'expired' };
        throw error;
      }
    });
  }

  /** Gives the owner's last hold of this mode back to the server. */
  private async unlock(session: PostgresSession): Promise<'released' | 'expired'> {
    const { mode } = this.family;
    if (this.ctx.sessions.scope === 'transaction') {
      // Transaction-level locks end only with their transaction: while the owner holds the other
      // side of the lock in it, this one stays held on the server too (stricter, never weaker).
      if (session.holds.exclusive + session.holds.shared === 0) {
        await session.query('COMMIT', [], this.name);
        session.inTransaction = false;
      }
      return 'released';
    }
    const [row] = await this.unlockQuery(session, mode);
    if (row?.released) return 'released';
    session.end(new Error(`lock "${this.name}" was not held by its session when released`));
    return 'expired';
  }

  /**
   * A late cancel (cancel-wait.sql's window) may hit the unlock: it is sent once more then. The first
   * unlock on a connection reads its own application_name (unlock.sql), the later ones are given it.
   */
  private async unlockQuery(session: PostgresSession, mode: Mode) {
    const run = async () => {
      const own = session.ownLabel;
      const shared = mode === 'shared';
      const rows = await session.query<{ released: boolean; label: string | null }>(
        own === undefined ? SQL.unlock : SQL.unlockLabelled,
        own === undefined ? [this.keyText, shared] : [this.keyText, shared, own],
        this.name,
      );
      const label = rows[0]?.label;
      if (own === undefined && typeof label === 'string') session.ownLabel = label;
      return rows;
    };
    return run().catch((error: unknown) => {
      if (sqlState(error) === '57014') return run();
      throw error;
    });
  }

  async extend(owner: string): Promise<ExtendStatus> {
    // No lease to extend: a hold lasts as long as its session.
    return this.ctx.sessions.peek(this.sessionId(owner))?.holds[this.family.mode] ? 'extended' : 'expired';
  }

  async inspect(): Promise<LockInfo> {
    const { rows } = await this.ctx.pool.query<{ exclusive: string; shared: string; waiting: string }>(
      SQL.holders,
      [[this.keyText]],
    );
    const holders = Number(this.family.mode === 'shared' ? rows[0]?.shared : rows[0]?.exclusive);
    // Only a fair lock queues every waiter on the server; the others queue one per client.
    const waiting = this.family.serverOrder ? Number(rows[0]?.waiting) : undefined;
    return { held: holders > 0, holders, remainingMs: undefined, waiting };
  }

  leave(owner: string, won: boolean): void {
    if (won) return;
    this.ctx.sessions.peek(this.sessionId(owner))?.wait?.abandon();
    this.ctx.deadlocks.take(this.sessionId(owner)); // found as the waiter left: nobody to tell
  }

  async holdCount(owner: string): Promise<number> {
    return this.ctx.sessions.peek(this.sessionId(owner))?.holds[this.family.mode] ?? 0;
  }

  /** The holders forceUnlock ends: this side's mode on this key. */
  get holderKeys(): { keys: string[]; mode: 'ExclusiveLock' | 'ShareLock' } {
    return { keys: [this.keyText], mode: this.family.mode === 'shared' ? 'ShareLock' : 'ExclusiveLock' };
  }

  private waitHooks() {
    const { ctx } = this;
    return {
      cancel: async (pid: number) => {
        const { rows } = await ctx.pool.query<{ cancelled: boolean }>(SQL.cancelWait, [pid]);
        return rows[0]?.cancelled === true;
      },
      giveBack: async (wait: BlockingWait) => {
        if (ctx.sessions.scope === 'transaction') {
          wait.session.poisoned = true; // rolled back when given back to the pool: the lock ends
          return;
        }
        await wait.session.serial(() => this.unlockQuery(wait.session, wait.mode));
      },
      settled: (wait: BlockingWait) => {
        const { session } = wait;
        if (session.wait === wait) session.wait = undefined;
        if (wait.state === 'failed') {
          // A failed statement aborted the transaction: nothing more can run in it. In a session, a
          // wait cancelled just after its grant leaves the lock held (unlock-all.sql).
          if (ctx.sessions.scope === 'transaction') session.poisoned = true;
          else session.unclean = true;
        }
        ctx.sessions.settle(session);
      },
      report: ctx.report,
    };
  }
}
