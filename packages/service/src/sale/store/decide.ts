/** One reservation read from a sale's stream. */
export interface OrderEntry {
  readonly saleId: string;
  readonly streamId: string;
  readonly orderId: string;
  readonly userId: string;
  readonly quantity: number;
  readonly reservedAtMs: number;
}

export interface SaleTotals {
  readonly stock: number;
  readonly sold: number;
  readonly perUserLimit: number;
}

export type RejectReason = 'sold_out' | 'limit_exceeded';

export type Decision =
  | { readonly entry: OrderEntry; readonly outcome: 'confirmed' }
  | { readonly entry: OrderEntry; readonly outcome: 'rejected'; readonly reason: RejectReason }
  /** Already recorded (a redelivery): nothing to write. */
  | { readonly entry: OrderEntry; readonly outcome: 'duplicate' }
  /** No such sale in the database: the entry cannot be recorded (dead-letter it). */
  | { readonly entry: OrderEntry; readonly outcome: 'unknown_sale' };

export const pairKey = (a: string, b: string) => `${a}\n${b}`;

/**
 * Decides a batch against the locked database totals, in stream order: an order is confirmed only if
 * the sale still has the units and the user stays within the limit; otherwise it is rejected with
 * the reason (possible only if Redis admitted more than the record allows, e.g. after losing writes).
 * Pure: the caller holds the row locks and writes the outcome.
 */
export function decideOrders(
  entries: readonly OrderEntry[],
  sales: ReadonlyMap<string, SaleTotals>,
  holdings: ReadonlyMap<string, number>,
  alreadyApplied: ReadonlySet<string>,
): Decision[] {
  const sold = new Map<string, number>();
  const held = new Map(holdings);
  const seen = new Set(alreadyApplied);
  return entries.map((entry): Decision => {
    const entryKey = pairKey(entry.saleId, entry.streamId);
    if (seen.has(entryKey)) return { entry, outcome: 'duplicate' };
    seen.add(entryKey);
    const sale = sales.get(entry.saleId);
    if (!sale) return { entry, outcome: 'unknown_sale' };
    const userKey = pairKey(entry.saleId, entry.userId);
    const userHolds = held.get(userKey) ?? 0;
    if (userHolds + entry.quantity > sale.perUserLimit)
      return { entry, outcome: 'rejected', reason: 'limit_exceeded' };
    const saleSold = sold.get(entry.saleId) ?? sale.sold;
    if (saleSold + entry.quantity > sale.stock) return { entry, outcome: 'rejected', reason: 'sold_out' };
    sold.set(entry.saleId, saleSold + entry.quantity);
    held.set(userKey, userHolds + entry.quantity);
    return { entry, outcome: 'confirmed' };
  });
}
