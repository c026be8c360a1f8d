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
import { permitNames, serverName } from './names.js';
import { SQL } from './sql.js';
import { BlockingWait, type MySqlSession } from './session.js';

/**
 * How long a waiting semaphore caller waits on one permit before it looks at all of them again, ms.
 * The server cannot wait for "any one of N locks": a waiter blocks on one permit (a release of that
 * one hands it over at once) and rechecks the others this often.
 */
export const PERMIT_SLICE_MS = 1_000;

/**
 * A semaphore of `permits` user locks (names.ts: permitNames): a holder takes the first free one in
 * its pinned session and holds it as long as that session — so a crashed or killed holder's permit
 * comes back when its connection ends, like a lease. A waiter blocks on one permit (GET_LOCK, the
 * permits taken in turn by successive waiters) for PERMIT_SLICE_MS, then tries all again.
 *
 * The count is each client's own configuration, not stored: clients of one name must agree on it (a
 * client asking for more permits uses more names). One permit per owner, as on Redis. Tokens come from
 * the fencing sequence (MariaDB ≥ 10.3) or the semaphore's own row of the fencing table (MySQL), drawn
 * once a permit is held.
 */
export class PermitResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel = undefined;
  readonly leases = 'none' as const;
  readonly handsOff = false;
  private readonly names: string[];
  private readonly tokenName: string;
  private turn = 0;

  constructor(
    private readonly ctx: MySqlLockContext,
    readonly name: string,
    permits: number,
  ) {
    this.names = permitNames(name, permits);
    this.tokenName = serverName('lss', name);
    this.waitKey = `mysql-permits:${this.tokenName}`;
  }

  private sessionId(owner: string): string {
    return `${this.tokenName}\0${owner}`;
  }

  attempt({ owner, waiting }: AttemptRequest): Promise<AttemptResult> {
    return this.ctx.sessions.use(this.sessionId(owner), this.name, (session) =>
      this.attemptIn(session, owner, waiting),
    );
  }

  private async attemptIn(session: MySqlSession, owner: string, waiting: boolean): Promise<AttemptResult> {
    const queued = await adoptQueuedWait(session, waiting);
    if (queued instanceof Busy) return queued; // still queued on the server: keep its place
    if (queued) return this.grant(session, queued.taken.serverName, queued.token);
    if (session.permit) return new Busy(PERMIT_SLICE_MS); // one permit per owner
    for (const permit of this.names) {
      const token = await this.ctx.tryTake(session, permit, this.tokenName, owner, false);
      if (token !== undefined) return this.grant(session, permit, token);
    }
    if (!waiting) return new Busy(PERMIT_SLICE_MS);
    const permit = this.names[this.turn++ % this.names.length] as string;
    const granted = session
      .rows<{ granted: number | null }>(SQL.waitLock, [permit, PERMIT_SLICE_MS / 1_000])
      .then((rows) => Number(rows[0]?.granted) === 1);
    const wait = new BlockingWait(session, permit, granted, this.ctx.waitHooks(this.tokenName, owner, false));
    session.wait = wait;
    return new Busy(undefined, wait.watch());
  }

  private grant(session: MySqlSession, permit: string, token: number): Granted {
    session.permit = permit;
    session.token = token;
    return new Granted(token, true, session.lost);
  }

  async release(owner: string): Promise<ReleaseResult> {
    const id = this.sessionId(owner);
    if (!this.ctx.sessions.peek(id)?.permit) return { outcome: 'expired' };
    return this.ctx.sessions.use(id, this.name, async (session) => {
      const { permit } = session;
      if (!permit) return { outcome: 'expired' };
      session.permit = undefined;
      try {
        const [row] = await session.rows<{ released: number | null }>(SQL.release, [permit]);
        if (Number(row?.released) === 1) return { outcome: 'released' };
        session.end(new Error(`a permit of "${this.name}" was not held by its session when released`));
        return { outcome: 'expired' };
      } catch (error) {
        if (session.ended) return { outcome: 'expired' }; // its connection ended: so did the permit
        throw error;
      }
    });
  }

  async extend(owner: string): Promise<ExtendStatus> {
    return this.ctx.sessions.peek(this.sessionId(owner))?.permit ? 'extended' : 'expired';
  }

  async inspect(): Promise<LockInfo> {
    let holders = 0;
    for (const permit of this.names) {
      const [rows] = await this.ctx.control.query(SQL.holder, [permit]);
      if ((rows as Array<{ holder: unknown }>)[0]?.holder != null) holders++;
    }
    return { held: holders > 0, holders, remainingMs: undefined };
  }

  leave(owner: string, won: boolean): void {
    if (!won) this.ctx.sessions.peek(this.sessionId(owner))?.wait?.abandon();
  }

  /** The server-side names forceUnlock frees: every permit. */
  get holderNames(): string[] {
    return this.names;
  }
}
