import { ID_PATTERN, IDEMPOTENCY_TTL_SECONDS } from '../keys.js';
import type { RawEntry, ReadEntry } from '../pipeline/stream.js';
import type { SaleRedis } from '../redis.js';
import type { Queryable } from '../store/db.js';
import type { OrderEntry, SettlementEntry } from '../store/decide.js';
import { queries } from '../store/queries.js';
import { recoveryQueries } from './queries.js';
import type { RestoredState } from './restore.js';

/**
 * Every entry of a stream, oldest first, parsed by `parse` (an entry it refuses — malformed — is left
 * out: the pipeline dead-letters it). Read in pages of 1,000.
 */
export async function readWholeStream<T>(
  redis: SaleRedis,
  stream: string,
  parse: (entry: ReadEntry) => T | undefined,
): Promise<T[]> {
  const entries: T[] = [];
  let start = '-';
  for (;;) {
    const batch = (await redis.xrange(stream, start, '+', 'COUNT', 1000)) as RawEntry[];
    for (const [id, fields] of batch) {
      const entry = parse({ stream, id, fields });
      if (entry !== undefined) entries.push(entry);
    }
    const last = batch.at(-1);
    if (!last || batch.length < 1000) return entries;
    start = `(${last[0]}`;
  }
}

/** What a sale's rebuild and a part's read alike from the record. */
export interface SharedRecordReads {
  /** Stream ids of the stream's reservations that the record has. */
  readonly applied: Set<string>;
  /** Record status of the orders the stream's settlements name. */
  readonly states: Map<string, string>;
  readonly unpaid: RestoredState['unpaid'];
  readonly keys: RestoredState['keys'];
}

/**
 * The reads a sale's rebuild and a part's rebuild share, inside the caller's REPEATABLE READ
 * transaction: which of the stream's reservations the record applied, the record's status of the
 * orders its settlements name, the unpaid orders and the Idempotency-Keys still within their time to
 * live — of the users `ours` accepts (a part's users; every user for a whole sale).
 */
export async function readSharedRecord(
  tx: Queryable,
  saleId: string,
  reservations: readonly OrderEntry[],
  settlements: readonly SettlementEntry[],
  ours: (userId: string) => boolean = () => true,
): Promise<SharedRecordReads> {
  const applied = reservations.length
    ? await tx.query<{ stream_id: string }>(queries.appliedEntries, [
        reservations.map(() => saleId),
        reservations.map((r) => r.streamId),
      ])
    : { rows: [] };
  const states = settlements.length
    ? await tx.query<{ id: string; status: string }>(recoveryQueries.orderStates, [
        [...new Set(settlements.map((s) => s.orderId))],
      ])
    : { rows: [] };
  const unpaid = await tx.query<{ id: string; user_id: string; quantity: number; pay_by: Date | string }>(
    queries.unpaidOrders,
    [saleId],
  );
  const keys = await tx.query<{
    id: string;
    user_id: string;
    quantity: number;
    idempotency_key: string;
    seconds_left: number;
  }>(recoveryQueries.idempotencyKeys, [saleId, IDEMPOTENCY_TTL_SECONDS]);
  return {
    applied: new Set(applied.rows.map((r) => r.stream_id)),
    states: new Map(states.rows.map((r) => [r.id, r.status])),
    unpaid: unpaid.rows
      .filter((r) => ours(r.user_id))
      .map((r) => ({
        id: r.id,
        userId: r.user_id,
        quantity: r.quantity,
        payByMs: new Date(r.pay_by).getTime(),
      })),
    keys: keys.rows
      .filter(
        (r) =>
          r.seconds_left > 0 &&
          ID_PATTERN.test(r.idempotency_key) &&
          ID_PATTERN.test(r.user_id) &&
          ours(r.user_id),
      )
      .map((r) => ({
        id: r.id,
        userId: r.user_id,
        quantity: r.quantity,
        key: r.idempotency_key,
        secondsLeft: r.seconds_left,
      })),
  };
}

/** What the stream holds that the record has not applied yet. */
export interface Unrecorded {
  /** Unapplied entries (they stay in the stream, and count). */
  readonly entries: number;
  /** Units they hold: reservations hold theirs; a cancellation or expiry gave its units back. */
  readonly units: number;
  /** The record's holdings per user plus what the unapplied entries hold. */
  readonly holdings: Map<string, number>;
}

/**
 * Counts the stream's entries the record has not applied: a reservation whose stream id the record
 * lacks holds its units; a settlement of an order the record has not settled (unknown, or still
 * confirmed) is in flight too, and gives its units back unless it is a payment.
 */
export function tallyUnrecorded(
  record: Pick<SharedRecordReads, 'applied' | 'states'> & { readonly holdings: ReadonlyMap<string, number> },
  reservations: readonly OrderEntry[],
  settlements: readonly SettlementEntry[],
): Unrecorded {
  let entries = 0;
  let units = 0;
  const holdings = new Map(record.holdings);
  const hold = (user: string, delta: number) => holdings.set(user, (holdings.get(user) ?? 0) + delta);
  for (const r of reservations) {
    if (record.applied.has(r.streamId)) continue;
    entries++;
    units += r.quantity;
    hold(r.userId, r.quantity);
  }
  for (const s of settlements) {
    const state = record.states.get(s.orderId);
    if (state !== undefined && state !== 'confirmed') continue; // applied (or refused) already
    entries++;
    if (s.status === 'paid') continue;
    units -= s.quantity;
    hold(s.userId, -s.quantity);
  }
  return { entries, units, holdings };
}
