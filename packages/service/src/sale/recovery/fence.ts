import { setTimeout as delay } from 'node:timers/promises';
import type { Database, Queryable } from '../store/db.js';
import { queries } from '../store/queries.js';

export interface PipelineFenceOptions {
  /** How often the pipelines' leases are looked at while waiting, ms. @default 50 */
  pollMs?: number;
  /**
   * The longest a rebuild waits for pipelines whose lease is live, ms; then it fences them out (the
   * batches they hold are refused, their orders lost and counted). A pipeline that dies stops
   * renewing, so the wait ends within its lease anyway. @default 30000
   */
  waitLimitMs?: number;
}

export interface FenceReport {
  /** The fence this rebuild raised. */
  readonly fence: number;
  readonly waitedMs: number;
  /** Pipelines the rebuild went ahead without (lease lapsed, or the wait limit reached). */
  readonly fencedOut: readonly string[];
}

/** How long one look waits for a lease row a batch in progress holds (the look is then repeated). */
const LOCK_WAIT_MS = 200;
/** SQLSTATE lock_not_available: lock_timeout ran out. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Called by a rebuild after its flag went up (nothing more is sold) and before it reads the stream
 * and the record: makes sure no order pipeline still holds, unrecorded, entries it read from Redis
 * before — entries that a Redis restarted empty no longer has, and that the record does not have yet,
 * so the rebuild would sell their units again and forget their buyers and Idempotency-Keys.
 *
 * Raises the recovery fence, then waits until every pipeline whose lease is live has drained it
 * (pipeline/lease.ts). Pipelines whose lease lapsed, and at `waitLimitMs` the ones still not drained,
 * are fenced out under their row lock: a batch they are recording either commits before (and is in
 * the record the rebuild reads next) or is refused (apply-orders.ts). A lease row that stays locked
 * — a batch's transaction stalled — cannot be fenced out: at the limit the rebuild fails, and is
 * tried again, rather than risk that batch committing behind its back.
 */
export async function fencePipelines(db: Database, options: PipelineFenceOptions = {}): Promise<FenceReport> {
  const began = performance.now();
  const deadline = began + (options.waitLimitMs ?? 30_000);
  const { rows } = await db.query<{ fence: string }>(queries.fenceNext);
  const fence = Number(rows[0]?.fence);
  for (;;) {
    const atLimit = performance.now() >= deadline;
    const fencedOut = await db
      .transaction((tx) => fenceOutOrWait(tx, fence, atLimit))
      .catch((error: unknown) => {
        if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error;
        if (atLimit) {
          throw new Error(
            `an order pipeline's batch has held its lease row for ${options.waitLimitMs ?? 30_000} ms: ` +
              'it can be neither waited for nor fenced out',
            { cause: error },
          );
        }
        return undefined; // a batch is being recorded: look again
      });
    if (fencedOut) return { fence, waitedMs: Math.round(performance.now() - began), fencedOut };
    await delay(options.pollMs ?? 50);
  }
}

/**
 * One look at the pipelines that have not drained `fence`, their rows locked: undefined while one
 * of them is live (and the limit is not reached); else they are fenced out and named.
 */
async function fenceOutOrWait(tx: Queryable, fence: number, atLimit: boolean): Promise<string[] | undefined> {
  await tx.query(`SET LOCAL lock_timeout = '${LOCK_WAIT_MS}ms'`);
  const { rows } = await tx.query<{ consumer: string; live: boolean }>(queries.fenceUndrained, [fence]);
  if (!atLimit && rows.some((row) => row.live)) return undefined;
  const consumers = rows.map((row) => row.consumer);
  if (consumers.length > 0) await tx.query(queries.fenceOut, [fence, consumers]);
  return consumers;
}
