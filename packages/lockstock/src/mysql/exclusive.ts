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
import type { MySqlLockContext } from './context.js';
import { SQL } from './sql.js';
import { BlockingWait, type MySqlSession } from './session.js';

/** How a family of user locks behaves: re-entry, and how its waiters wait. */
export interface ExclusiveFamily {
  /** The same owner acquiring again adds a hold (without a round trip); otherwise it is refused. */
  readonly reentrant: boolean;
  /** 'queue': waiters wait in the server's queue (a blocking GET_LOCK); 'backoff': they retry (spin). */
  readonly waits: 'queue' | 'backoff';
  /** Every waiter of every client queues on the server (fair); otherwise one per client (its head). */
  readonly serverOrder: boolean;
  /** Each grant records its holder in the fencing row (an election's lock: the leader is read there). */
  readonly records: boolean;
}

/**
 * A lock on one user-lock name (GET_LOCK), held by the owner's pinned session (see MySqlSession):
 * mutex, reentrant, fair and spin locks — all of a name on the same server-side name (names.ts), so
 * they exclude each other as on Redis; an election's lock is one of its own.
 *
 * Holds have no lease: they last as long as the owner's session, and the grant carries the session's
 * `lost`, so a dropped or killed connection aborts exactly the hold it carried. Re-entry and the token
 * are kept in the session. Waiters queue in the server's queue (BlockingWait), first come first served.
 */
export class ExclusiveResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel = undefined;
  readonly leases = 'none' as const;
  readonly handsOff = false;
  readonly ordering: 'server-order' | undefined;

  constructor(
    private readonly ctx: MySqlLockContext,
    readonly name: string,
    /** The name on the server (names.ts). */
    readonly serverName: string,
    private readonly family: ExclusiveFamily,
  ) {
    this.waitKey = `mysql:${serverName}`;
    this.ordering = family.serverOrder ? 'server-order' : undefined;
  }

  private sessionId(owner: string): string {
    return `${this.serverName}\0${owner}`;
  }

  attempt({ owner, waiting }: AttemptRequest): Promise<AttemptResult> {
    return this.ctx.sessions.use(this.sessionId(owner), this.name, (session) =>
      this.attemptIn(session, owner, waiting),
    );
  }

  private async attemptIn(session: MySqlSession, owner: string, waiting: boolean): Promise<AttemptResult> {
    const queued = await adoptQueuedWait(session, waiting);
    if (queued instanceof Busy) return queued; // still queued on the server: keep its place
    if (queued) return this.grant(session, queued.token);
    if (session.holds > 0) {
      if (!this.family.reentrant) return new Busy(undefined); // one hold per owner, as on Redis
      return this.grant(session, session.token);
    }
    const token = await this.ctx.tryTake(
      session,
      this.serverName,
      this.serverName,
      owner,
      this.family.records,
    );
    if (token !== undefined) return this.grant(session, token);
    if (!waiting || this.family.waits === 'backoff') return new Busy(undefined);
    const granted = session
      .rows<{ granted: number | null }>(SQL.waitLock, [this.serverName, this.ctx.waitSliceMs / 1_000])
      .then((rows) => Number(rows[0]?.granted) === 1);
    const wait = new BlockingWait(
      session,
      this.serverName,
      granted,
      this.ctx.waitHooks(this.serverName, owner, this.family.records),
    );
    session.wait = wait;
    return new Busy(undefined, wait.watch());
  }

  private grant(session: MySqlSession, token: number): Granted {
    if (session.holds++ === 0) session.token = token;
    return new Granted(session.token, false, session.lost);
  }

  async release(owner: string): Promise<ReleaseResult> {
    const id = this.sessionId(owner);
    // No session (it ended, or never was): the hold is over already.
    if (!this.ctx.sessions.peek(id)?.holds) return { outcome: 'expired' };
    return this.ctx.sessions.use(id, this.name, async (session) => {
      if (session.holds === 0) return { outcome: 'expired' };
      if (--session.holds > 0) return { outcome: 'still_held' };
      try {
        const [row] = await session.rows<{ released: number | null }>(SQL.release, [this.serverName]);
        if (Number(row?.released) === 1) return { outcome: 'released' };
        session.end(new Error(`lock "${this.name}" was not held by its session when released`));
        return { outcome: 'expired' };
      } catch (error) {
        // The connection went while releasing: the server ended the session, and the lock with it.
        if (session.ended) return { outcome: 'expired' };
        throw error;
      }
    });
  }

  async extend(owner: string): Promise<ExtendStatus> {
    // No lease to extend: a hold lasts as long as its session.
    return this.ctx.sessions.peek(this.sessionId(owner))?.holds ? 'extended' : 'expired';
  }

  async inspect(): Promise<LockInfo> {
    const [rows] = await this.ctx.control.query(SQL.holder, [this.serverName]);
    const held = (rows as Array<{ holder: unknown }>)[0]?.holder != null;
    return { held, holders: held ? 1 : 0, remainingMs: undefined };
  }

  leave(owner: string, won: boolean): void {
    if (!won) this.ctx.sessions.peek(this.sessionId(owner))?.wait?.abandon();
  }

  async holdCount(owner: string): Promise<number> {
    return this.ctx.sessions.peek(this.sessionId(owner))?.holds ?? 0;
  }

  /** The server-side names forceUnlock frees. */
  get holderNames(): string[] {
    return [this.serverName];
  }
}
