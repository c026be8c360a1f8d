import {
  Busy,
  Granted,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import type { PostgresLockContext } from './context.js';
import { permitChannel, permitKeys } from './keys.js';
import type { PostgresSession } from './session.js';
import { SCOPE_SQL, SQL } from './sql.js';

/**
 * How long a waiting semaphore caller goes without trying again when no release wakes it, ms. A
 * holder whose session ends (crash, terminated) sends no NOTIFY, and PostgreSQL cannot wait for "any
 * one of N locks": this recheck is how such a permit is found. Graceful releases wake at once.
 */
export const PERMIT_RECHECK_MS = 1_000;

/**
 * A semaphore of `permits` advisory locks (keys.ts: permitKeys): a holder takes the first free one in
 * its pinned session (try-permit.sql) and holds it as long as that session — so a crashed holder's
 * permit comes back when PostgreSQL ends its session, like a lease. Releases NOTIFY the semaphore's
 * channel; waiters are woken by it (LISTEN on one connection per client) and recheck every
 * PERMIT_RECHECK_MS for permits freed without one.
 *
 * The count is each client's own configuration, not stored: clients of one name must agree on it
 * (a client asking for more permits uses more keys). One permit per owner, as on Redis.
 */
export class PermitResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string;
  readonly leases = 'none' as const;
  readonly handsOff = false;
  private readonly keys: string[];

  constructor(
    private readonly ctx: PostgresLockContext,
    readonly name: string,
    permits: number,
  ) {
    this.keys = permitKeys(name, permits).map(String);
    this.waitKey = `pg-permits:${name}`;
    this.wakeChannel = permitChannel(name);
  }

  private sessionId(owner: string): string {
    return `permits:${this.name}:${owner}`;
  }

  attempt({ owner }: AttemptRequest): Promise<AttemptResult> {
    return this.ctx.sessions.use(this.sessionId(owner), this.name, (session) => this.attemptIn(session));
  }

  private async attemptIn(session: PostgresSession): Promise<AttemptResult> {
    if (session.permit) return new Busy(PERMIT_RECHECK_MS); // one permit per owner
    if (this.ctx.sessions.scope === 'transaction' && !session.inTransaction) {
      await session.query('BEGIN', [], this.name);
      session.inTransaction = true;
    }
    const [row] = await session.query<{ slot: number; token: string }>(
      SCOPE_SQL[this.ctx.sessions.scope].tryPermit,
      [this.keys, this.ctx.sequence()],
      this.name,
    );
    if (!row) return new Busy(PERMIT_RECHECK_MS);
    const token = Number(row.token);
    session.permit = { key: BigInt(this.keys[Number(row.slot)] as string), token };
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
        if (this.ctx.sessions.scope === 'transaction') {
          await session.query(SQL.notify, [this.wakeChannel], this.name);
          await session.query('COMMIT', [], this.name); // the permit ends, and the NOTIFY goes out
          session.inTransaction = false;
          return { outcome: 'released' };
        }
        const [row] = await session.query<{ released: boolean }>(
          SQL.unlockPermit,
          [permit.key.toString(), this.wakeChannel],
          this.name,
        );
        if (row?.released) return { outcome: 'released' };
        session.end(new Error(`a permit of "${this.name}" was not held by its session when released`));
        return { outcome: 'expired' };
      } catch (error) {
        if (session.ended) return { outcome: 'expired' }; // its session ended: so did the permit
        throw error;
      }
    });
  }

  async extend(owner: string): Promise<ExtendStatus> {
    return this.ctx.sessions.peek(this.sessionId(owner))?.permit ? 'extended' : 'expired';
  }

  async inspect(): Promise<LockInfo> {
    const { rows } = await this.ctx.pool.query<{ exclusive: string }>(SQL.holders, [this.keys]);
    const holders = Number(rows[0]?.exclusive ?? 0);
    return { held: holders > 0, holders, remainingMs: undefined };
  }

  leave(): void {} // waiters queue nowhere on the server

  /** The holders forceUnlock ends: every permit. */
  get holderKeys(): { keys: string[]; mode: 'ExclusiveLock' } {
    return { keys: this.keys, mode: 'ExclusiveLock' };
  }
}
