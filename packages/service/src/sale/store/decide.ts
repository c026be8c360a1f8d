import type { SettledStatus } from '../types.js';

/** One reservation read from a sale's stream. */
export interface OrderEntry {
  readonly kind: 'reservation';
  readonly saleId: string;
  readonly streamId: string;
  readonly orderId: string;
  readonly userId: string;
  readonly quantity: number;
  readonly reservedAtMs: number;
  /** The purchase's Idempotency-Key, if it had one (kept in the record for recovery). */
  readonly idempotencyKey?: string;
  /** The part of a split sale it was reserved in (its streamId is then "<ms>-<seq>@<part>"). */
  readonly part?: number;
}

/** One lifecycle event read from a sale's stream: Redis settled an order (paid, cancelled, expired). */
export interface SettlementEntry {
  readonly kind: 'settlement';
  readonly saleId: string;
  readonly streamId: string;
  readonly orderId: string;
  readonly userId: string;
  readonly quantity: number;
  readonly status: SettledStatus;
  readonly settledAtMs: number;
  /** The part of a split sale it was settled in. */
  readonly part?: number;
}

/** One step of a transfer between the parts of a split sale (transfer-out / transfer-in). */
export interface MoveEntry {
  readonly kind: 'move';
  readonly saleId: string;
  /** The part whose stream holds the entry. */
  readonly part: number;
  /** The entry's id in that part's stream ("<ms>-<seq>"). */
  readonly streamId: string;
  readonly transferId: string;
  /** out: the part gave the units; in: it was credited them. */
  readonly direction: 'out' | 'in';
  /** The receiver of an out, the donor of an in. */
  readonly otherPart: number;
  readonly units: number;
  readonly atMs: number;
}

/** What decideOrders decides (moves are recorded as they are, without a decision). */
export type PipelineEntry = OrderEntry | SettlementEntry;

/** Every kind of entry a sale stream holds. */
export type StreamEntry = PipelineEntry | MoveEntry;

export interface SaleTotals {
  readonly stock: number;
  /** Units held by confirmed and paid orders. */
  readonly sold: number;
  readonly perUserLimit: number;
  /** null: the sale has no payment window. */
  readonly payWithinSeconds: number | null;
}

/** An order as the record holds it (locked for the batch). */
export interface RecordedOrder {
  readonly saleId: string;
  readonly userId: string;
  readonly quantity: number;
  readonly status: string;
}

/** An entry already recorded: how its order stands now. */
export interface AppliedEntry {
  readonly status: string;
  readonly payByMs: number | null;
}

export type RejectReason = 'sold_out' | 'limit_exceeded';

export type Decision =
  /** Recorded as confirmed; `payByMs`: its payment deadline (null: the sale has no window). */
  | { readonly entry: OrderEntry; readonly outcome: 'confirmed'; readonly payByMs: number | null }
  | { readonly entry: OrderEntry; readonly outcome: 'rejected'; readonly reason: RejectReason }
  /**
   * Already recorded (a redelivery): nothing to write. `reopenByMs`: the order is still confirmed with
   * a deadline, so it is opened for payment again (idempotent; a settled order stays closed).
   */
  | { readonly entry: OrderEntry; readonly outcome: 'duplicate'; readonly reopenByMs: number | null }
  /** No such sale in the database: the entry cannot be recorded (dead-letter it). */
  | { readonly entry: OrderEntry; readonly outcome: 'unknown_sale' }
  /** The order moves from confirmed to the entry's status (cancelled and expired give units back). */
  | { readonly entry: SettlementEntry; readonly outcome: 'settled' }
  /** The record already holds the order in the entry's status (a redelivery). */
  | { readonly entry: SettlementEntry; readonly outcome: 'duplicate' }
  /** A transfer step, recorded (or already recorded: the same). */
  | { readonly entry: MoveEntry; readonly outcome: 'moved' }
  /** The record has no such order, or holds it in another state: Redis and the record disagree. */
  | {
      readonly entry: SettlementEntry;
      readonly outcome: 'unknown_order' | 'conflict';
      readonly found?: string;
    };

export const pairKey = (a: string, b: string) => `${a}\n${b}`;

/** Whether a settled order gives its units back. */
export const releases = (status: SettledStatus) => status !== 'paid';

/** What the batch's decisions see of the record, locked by the caller. */
export interface RecordState {
  readonly sales: ReadonlyMap<string, SaleTotals>;
  /** (sale, user) → units held */
  readonly holdings: ReadonlyMap<string, number>;
  /** (sale, stream entry) of reservations already recorded */
  readonly applied: ReadonlyMap<string, AppliedEntry>;
  /** order id → the order, for the orders the batch's settlements name */
  readonly orders: ReadonlyMap<string, RecordedOrder>;
}

/**
 * Decides a batch against the locked database totals, in stream order: a reservation is confirmed only
 * if the sale still has the units and the user stays within the limit; otherwise it is rejected with
 * the reason (possible only if Redis admitted more than the record allows, e.g. after losing writes).
 * A settlement applies only to a confirmed order (compare-and-set), and a cancelled or expired order's
 * units count as free for the entries after it. Pure: the caller holds the row locks and writes the
 * outcome.
 */
export function decideOrders(entries: readonly PipelineEntry[], record: RecordState): Decision[] {
  const sold = new Map<string, number>();
  const held = new Map(record.holdings);
  const seen = new Map(record.applied);
  const orders = new Map(record.orders);
  const soldOf = (saleId: string, sale: SaleTotals) => sold.get(saleId) ?? sale.sold;
  return entries.map((entry): Decision => {
    if (entry.kind === 'settlement') return settle(entry);
    const entryKey = pairKey(entry.saleId, entry.streamId);
    const applied = seen.get(entryKey);
    if (applied) {
      const reopen = applied.status === 'confirmed' ? applied.payByMs : null;
      return { entry, outcome: 'duplicate', reopenByMs: reopen };
    }
    const sale = record.sales.get(entry.saleId);
    if (!sale) return { entry, outcome: 'unknown_sale' };
    const userKey = pairKey(entry.saleId, entry.userId);
    const userHolds = held.get(userKey) ?? 0;
    const payByMs = sale.payWithinSeconds === null ? null : entry.reservedAtMs + sale.payWithinSeconds * 1000;
    seen.set(entryKey, { status: 'rejected', payByMs });
    if (userHolds + entry.quantity > sale.perUserLimit)
      return { entry, outcome: 'rejected', reason: 'limit_exceeded' };
    const saleSold = soldOf(entry.saleId, sale);
    if (saleSold + entry.quantity > sale.stock) return { entry, outcome: 'rejected', reason: 'sold_out' };
    seen.set(entryKey, { status: 'confirmed', payByMs });
    sold.set(entry.saleId, saleSold + entry.quantity);
    held.set(userKey, userHolds + entry.quantity);
    orders.set(entry.orderId, { ...entry, status: 'confirmed' });
    return { entry, outcome: 'confirmed', payByMs };
  });

  function settle(entry: SettlementEntry): Decision {
    const order = orders.get(entry.orderId);
    if (!order) return { entry, outcome: 'unknown_order' };
    if (order.status === entry.status) return { entry, outcome: 'duplicate' };
    if (
      order.status !== 'confirmed' ||
      order.saleId !== entry.saleId ||
      order.userId !== entry.userId ||
      order.quantity !== entry.quantity
    ) {
      return { entry, outcome: 'conflict', found: order.status };
    }
    orders.set(entry.orderId, { ...order, status: entry.status });
    if (releases(entry.status)) {
      const sale = record.sales.get(entry.saleId) as SaleTotals; // the order's sale exists: FK
      const userKey = pairKey(entry.saleId, entry.userId);
      sold.set(entry.saleId, soldOf(entry.saleId, sale) - entry.quantity);
      held.set(userKey, (held.get(userKey) ?? 0) - entry.quantity);
    }
    return { entry, outcome: 'settled' };
  }
}
