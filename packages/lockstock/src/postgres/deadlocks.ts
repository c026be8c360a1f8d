import { createHash } from 'node:crypto';
import { LockDeadlockError } from '../locks/errors.js';
import type { Pool } from './driver.js';
import type { BlockingWait } from './session.js';
import { SQL } from './sql.js';

/**
 * How a session names its owner to the server (application_name, which deadlock-check.sql reads):
 * `lockstock ` and 20 hex digits of SHA-256 over the owner id (the id itself is a secret: knowing it
 * proves ownership, see adopt()). 80 bits: two owners of one cycle share a label with odds ~2^-80.
 */
export function ownerLabel(owner: string): string {
  return `lockstock ${createHash('sha256').update(owner, 'utf8').digest('hex').slice(0, 20)}`;
}

/**
 * Finds cycles of owners waiting for each other's advisory locks, which PostgreSQL cannot: an owner's
 * locks sit on separate sessions (one per lock), and the server's detector stops at a holder that is
 * idle — as each owner's holding session is. A wait that has lasted the server's `deadlock_timeout`
 * reads the wait graph by owner label (deadlock-check.sql), then again every `deadlock_timeout`.
 *
 * One owner of a cycle is chosen, as PostgreSQL chooses one: the one with the greatest label, when
 * it sees the cycle; any other owner withdraws only on its second sighting of the same cycle (the
 * chosen one, if it is still waiting, has checked by then), so normally exactly one acquire fails.
 * The choice is recorded by session; the waiter's next attempt throws it (take()).
 */
export class DeadlockDetector {
  private timeoutMs: Promise<number> | undefined;
  private readonly found = new Map<string, LockDeadlockError>();

  constructor(
    private readonly pool: Pool,
    private readonly report: (error: unknown) => void,
  ) {}

  /** Watches `wait` (of owner `owner`'s session `sessionId`) until it is granted or ends. */
  watch(wait: BlockingWait, sessionId: string, lockName: string, owner: string, label: string): void {
    let timer: NodeJS.Timeout | undefined;
    let sightings = 0;
    const check = async (): Promise<void> => {
      const pid = wait.session.serverPid;
      if (wait.state !== 'pending' || pid === undefined) return;
      const { rows } = await this.pool.query<{ cycle: string[] | null }>(SQL.deadlockCheck, [pid, label]);
      const cycle = rows[0]?.cycle;
      if (!cycle) sightings = 0;
      else if (++sightings >= 2 || cycle.every((other) => other <= label)) {
        if (wait.state !== 'pending') return;
        this.found.set(sessionId, new LockDeadlockError(lockName, owner, 'client', cycle));
        wait.abandon(); // cancels it on the server; its watch fires, the waiter's attempt throws
        return;
      }
      schedule(await this.deadlockTimeout());
    };
    const schedule = (ms: number) => {
      timer = setTimeout(() => void check().catch(this.report), ms).unref();
    };
    void this.deadlockTimeout().then(schedule).catch(this.report);
    void wait.done.finally(() => clearTimeout(timer));
  }

  /** The deadlock found for session `sessionId`'s last wait, once (its waiter's attempt throws it). */
  take(sessionId: string): LockDeadlockError | undefined {
    const error = this.found.get(sessionId);
    this.found.delete(sessionId);
    return error;
  }

  /** The server's deadlock_timeout, read once (read again after a failure). */
  private deadlockTimeout(): Promise<number> {
    this.timeoutMs ??= this.pool
      .query<{ ms: number }>(SQL.deadlockTimeout)
      .then(({ rows }) => Math.max(rows[0]?.ms ?? 1_000, 10));
    return this.timeoutMs.catch((error: unknown) => {
      this.timeoutMs = undefined;
      throw error;
    });
  }
}
