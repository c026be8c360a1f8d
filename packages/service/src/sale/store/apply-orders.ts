import type { Database, Queryable } from './db.js';
import {
  decideOrders,
  pairKey,
  releases,
  type AppliedEntry,
  type Decision,
  type MoveEntry,
  type PipelineEntry,
  type RecordedOrder,
  type SaleTotals,
  type StreamEntry,
} from './decide.js';
import { FencedOutError } from './fenced-out.js';
import { queries } from './queries.js';

const toMs = (value: Date | string | null) => (value === null ? null : new Date(value).getTime());

/**
 * Records a batch of stream entries in one transaction: locks the sales, the orders the batch's
 * settlements name and the users' holdings (always in that order), skips reservations already
 * recorded (the inbox; not looked up for first deliveries, whose duplicates the inbox's unique
 * constraint would refuse anyway), decides each entry (decide.ts), and writes orders, settlements, holdings and
 * sale totals. The tables' CHECK constraints refuse an oversell, a user over the limit or units given
 * back twice even if the decision logic were wrong — the transaction would fail instead.
 *
 * With `lease` (the order pipeline's), the batch is first checked against the recovery fence: if a
 * rebuild went ahead without waiting for this pipeline, FencedOutError, and nothing is written.
 * With `afterLocking`, the caller checks under the sales' locks that the batch may be decided now.
 *
 * Transfer steps of split sales (moves) are written as they are, in the same transaction: they change
 * no total the fences check (units move between parts, the sale's stock stays).
 */
export async function applyOrders(
  db: Database,
  streamEntries: readonly StreamEntry[],
  options: {
    /** The entries were never delivered before: none can be recorded yet, skip the inbox lookup. */
    fresh?: boolean;
    /** The recording pipeline, and the recovery fence the step that read the batch began at. */
    lease?: { consumer: string; stepFence: number };
    /**
     * Called once the batch's sales are locked, before anything is decided: throws if entries before
     * the batch are not recorded yet (the order pipeline's stream order, pipeline/stream-order.ts).
     */
    afterLocking?: () => Promise<void>;
  } = {},
): Promise<Decision[]> {
  if (streamEntries.length === 0) return [];
  const { lease } = options;
  const entries = streamEntries.filter((e): e is PipelineEntry => e.kind !== 'move');
  const moves = streamEntries.filter((e): e is MoveEntry => e.kind === 'move');
  return db.transaction(async (tx) => {
    if (lease) await checkLease(tx, lease.consumer, lease.stepFence);
    const moved = await writeMoves(tx, moves);
    if (entries.length === 0) return moved;
    const saleIds = [...new Set(entries.map((e) => e.saleId))];
    const saleRows = await tx.query<{
      id: string;
      stock: number;
      sold: number;
      per_user_limit: number;
      pay_within_seconds: number | null;
    }>(queries.lockSales, [saleIds]);
    await options.afterLocking?.();
    const sales = new Map<string, SaleTotals>(
      saleRows.rows.map((r) => [
        r.id,
        {
          stock: r.stock,
          sold: r.sold,
          perUserLimit: r.per_user_limit,
          payWithinSeconds: r.pay_within_seconds,
        },
      ]),
    );
    const reservations = entries.filter((e) => e.kind === 'reservation');
    const settlements = entries.filter((e) => e.kind === 'settlement');
    const applied =
      reservations.length && !options.fresh
        ? await tx.query<{
            sale_id: string;
            stream_id: string;
            status: string;
            pay_by: Date | string | null;
          }>(queries.appliedEntries, [reservations.map((e) => e.saleId), reservations.map((e) => e.streamId)])
        : { rows: [] };
    const orders = settlements.length
      ? await tx.query<{ id: string; sale_id: string; user_id: string; quantity: number; status: string }>(
          queries.lockOrders,
          [[...new Set(settlements.map((e) => e.orderId))]],
        )
      : { rows: [] };
    const holdingRows = await tx.query<{ sale_id: string; user_id: string; quantity: number }>(
      queries.lockPurchases,
      [entries.map((e) => e.saleId), entries.map((e) => e.userId)],
    );
    const decisions = decideOrders(entries, {
      sales,
      holdings: new Map(holdingRows.rows.map((r) => [pairKey(r.sale_id, r.user_id), r.quantity])),
      applied: new Map(
        applied.rows.map((r): [string, AppliedEntry] => [
          pairKey(r.sale_id, r.stream_id),
          { status: r.status, payByMs: toMs(r.pay_by) },
        ]),
      ),
      orders: new Map(
        orders.rows.map((r): [string, RecordedOrder] => [
          r.id,
          { saleId: r.sale_id, userId: r.user_id, quantity: r.quantity, status: r.status },
        ]),
      ),
    });
    await writeDecisions(tx, decisions, sales);
    return [...decisions, ...moved];
  });
}

/** Moves in one order in every transaction (sale, part, entry), so two batches never wait on each other in a cycle. */
async function writeMoves(tx: Queryable, unordered: readonly MoveEntry[]): Promise<Decision[]> {
  if (unordered.length === 0) return [];
  const moves = [...unordered].sort(
    (a, b) => a.saleId.localeCompare(b.saleId) || a.part - b.part || a.streamId.localeCompare(b.streamId),
  );
  await tx.query(queries.insertMoves, [
    moves.map((m) => m.saleId),
    moves.map((m) => m.part),
    moves.map((m) => m.streamId),
    moves.map((m) => m.transferId),
    moves.map((m) => m.direction),
    moves.map((m) => m.otherPart),
    moves.map((m) => m.units),
    moves.map((m) => new Date(m.atMs).toISOString()),
  ]);
  return moves.map((entry) => ({ entry, outcome: 'moved' }));
}

/**
 * Refuses the batch if a rebuild fenced its pipeline out after the step that read it began; else
 * keeps the lease row locked (FOR KEY SHARE) until the transaction ends, so a rebuild deciding about
 * this pipeline waits for the batch and then finds it in the record.
 */
async function checkLease(tx: Queryable, consumer: string, stepFence: number): Promise<void> {
  const { rows } = await tx.query<{ fenced: boolean }>(queries.leaseCheck, [consumer, stepFence]);
  if (rows[0]?.fenced !== false) throw new FencedOutError(consumer, stepFence);
}

async function writeDecisions(
  tx: Queryable,
  decisions: readonly Decision[],
  sales: ReadonlyMap<string, SaleTotals>,
): Promise<void> {
  const recorded = decisions.filter(
    (d): d is Extract<Decision, { outcome: 'confirmed' | 'rejected' }> =>
      d.outcome === 'confirmed' || d.outcome === 'rejected',
  );
  if (recorded.length > 0) {
    await tx.query(queries.insertOrders, [
      recorded.map((d) => d.entry.orderId),
      recorded.map((d) => d.entry.saleId),
      recorded.map((d) => d.entry.userId),
      recorded.map((d) => d.entry.quantity),
      recorded.map((d) => d.outcome),
      recorded.map((d) => (d.outcome === 'rejected' ? d.reason : null)),
      recorded.map((d) => d.entry.streamId),
      recorded.map((d) => new Date(d.entry.reservedAtMs).toISOString()),
      recorded.map((d) =>
        d.outcome === 'confirmed' && d.payByMs !== null ? new Date(d.payByMs).toISOString() : null,
      ),
      recorded.map((d) => d.entry.idempotencyKey ?? null),
      recorded.map((d) => d.entry.part ?? null),
    ]);
  }
  // After the inserts: a settlement of an order confirmed in this very batch finds its row.
  const settled = decisions.filter(
    (d): d is Extract<Decision, { outcome: 'settled' }> => d.outcome === 'settled',
  );
  if (settled.length > 0) {
    const { rowCount } = await tx.query(queries.settleOrders, [
      settled.map((d) => d.entry.orderId),
      settled.map((d) => d.entry.status),
      settled.map((d) => new Date(d.entry.settledAtMs).toISOString()),
    ]);
    // The rows are locked and were confirmed: a shortfall means the decision logic is wrong.
    if (rowCount !== settled.length)
      throw new Error(`settled ${rowCount} of ${settled.length} orders; rolling back`);
  }
  await writeHoldings(tx, decisions, sales);
}

/**
 * Units per (sale, user) and per sale, net of the batch (confirmed reservations add, cancelled and
 * expired orders give back): one row each, as ON CONFLICT may touch a row once.
 */
async function writeHoldings(
  tx: Queryable,
  decisions: readonly Decision[],
  sales: ReadonlyMap<string, SaleTotals>,
): Promise<void> {
  const perUser = new Map<string, { saleId: string; userId: string; units: number }>();
  const perSale = new Map<string, number>();
  for (const decision of decisions) {
    const { entry } = decision;
    if (entry.kind === 'move') continue; // moves change no holding
    let units: number;
    if (decision.outcome === 'confirmed') units = entry.quantity;
    else if (decision.outcome === 'settled' && releases(decision.entry.status)) units = -entry.quantity;
    else continue;
    const key = pairKey(entry.saleId, entry.userId);
    const holding = perUser.get(key) ?? { saleId: entry.saleId, userId: entry.userId, units: 0 };
    holding.units += units;
    perUser.set(key, holding);
    perSale.set(entry.saleId, (perSale.get(entry.saleId) ?? 0) + units);
  }
  const added = [...perUser.values()].filter((h) => h.units > 0);
  if (added.length > 0) {
    await tx.query(queries.addPurchases, [
      added.map((h) => h.saleId),
      added.map((h) => h.userId),
      added.map((h) => h.units),
      added.map((h) => sales.get(h.saleId)?.perUserLimit ?? 1),
    ]);
  }
  const released = [...perUser.values()].filter((h) => h.units < 0);
  if (released.length > 0) {
    const { rowCount } = await tx.query(queries.releasePurchases, [
      released.map((h) => h.saleId),
      released.map((h) => h.userId),
      released.map((h) => -h.units),
    ]);
    if (rowCount !== released.length)
      throw new Error(`released ${rowCount} of ${released.length} holdings; rolling back`);
  }
  const totals = [...perSale].filter(([, units]) => units !== 0);
  if (totals.length > 0) {
    await tx.query(queries.addSold, [totals.map(([id]) => id), totals.map(([, units]) => units)]);
  }
}
