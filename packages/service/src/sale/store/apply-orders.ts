import type { Database } from './db.js';
import { decideOrders, pairKey, type Decision, type OrderEntry, type SaleTotals } from './decide.js';
import { queries } from './queries.js';

/**
 * Records a batch of reservations in one transaction: locks the sales and the users' holdings,
 * skips entries already recorded (the inbox), decides each order (decide.ts), and writes orders,
 * holdings and sale totals. The tables' CHECK constraints refuse an oversell or a user over the
 * limit even if the decision logic were wrong — the transaction would fail instead.
 */
export async function applyOrders(db: Database, entries: readonly OrderEntry[]): Promise<Decision[]> {
  if (entries.length === 0) return [];
  return db.transaction(async (tx) => {
    const saleIds = [...new Set(entries.map((e) => e.saleId))];
    const saleRows = await tx.query<{ id: string; stock: number; sold: number; per_user_limit: number }>(
      queries.lockSales,
      [saleIds],
    );
    const sales = new Map<string, SaleTotals>(
      saleRows.rows.map((r) => [r.id, { stock: r.stock, sold: r.sold, perUserLimit: r.per_user_limit }]),
    );
    const applied = await tx.query<{ sale_id: string; stream_id: string }>(queries.appliedEntries, [
      entries.map((e) => e.saleId),
      entries.map((e) => e.streamId),
    ]);
    const holdingRows = await tx.query<{ sale_id: string; user_id: string; quantity: number }>(
      queries.lockPurchases,
      [entries.map((e) => e.saleId), entries.map((e) => e.userId)],
    );
    const decisions = decideOrders(
      entries,
      sales,
      new Map(holdingRows.rows.map((r) => [pairKey(r.sale_id, r.user_id), r.quantity])),
      new Set(applied.rows.map((r) => pairKey(r.sale_id, r.stream_id))),
    );
    await writeDecisions(tx, decisions, sales);
    return decisions;
  });
}

async function writeDecisions(
  tx: Pick<Database, 'query'>,
  decisions: readonly Decision[],
  sales: ReadonlyMap<string, SaleTotals>,
): Promise<void> {
  const recorded = decisions.filter((d) => d.outcome === 'confirmed' || d.outcome === 'rejected');
  if (recorded.length === 0) return;
  await tx.query(queries.insertOrders, [
    recorded.map((d) => d.entry.orderId),
    recorded.map((d) => d.entry.saleId),
    recorded.map((d) => d.entry.userId),
    recorded.map((d) => d.entry.quantity),
    recorded.map((d) => d.outcome),
    recorded.map((d) => (d.outcome === 'rejected' ? d.reason : null)),
    recorded.map((d) => d.entry.streamId),
    recorded.map((d) => new Date(d.entry.reservedAtMs).toISOString()),
  ]);
  // Confirmed units per (sale, user) and per sale: one row each, as ON CONFLICT may touch a row once.
  const perUser = new Map<string, { saleId: string; userId: string; units: number }>();
  const perSale = new Map<string, number>();
  for (const { entry, outcome } of recorded) {
    if (outcome !== 'confirmed') continue;
    const key = pairKey(entry.saleId, entry.userId);
    const holding = perUser.get(key) ?? { saleId: entry.saleId, userId: entry.userId, units: 0 };
    holding.units += entry.quantity;
    perUser.set(key, holding);
    perSale.set(entry.saleId, (perSale.get(entry.saleId) ?? 0) + entry.quantity);
  }
  if (perSale.size === 0) return;
  const holdings = [...perUser.values()];
  await tx.query(queries.addPurchases, [
    holdings.map((h) => h.saleId),
    holdings.map((h) => h.userId),
    holdings.map((h) => h.units),
    holdings.map((h) => sales.get(h.saleId)?.perUserLimit ?? 1),
  ]);
  await tx.query(queries.addSold, [[...perSale.keys()], [...perSale.values()]]);
}
