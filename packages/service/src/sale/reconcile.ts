import { loadLuaScript } from 'lockstock/redis';
import type { SaleContext } from './context/context.js';
import { ORDER_GROUP, type SaleKeys } from './keys.js';
import { deadlineMember, lifecycleScripts } from './lifecycle/scripts.js';
import type { SaleService } from './service.js';
import type { Database } from './store/db.js';
import { queries } from './store/queries.js';
import { records } from './store/records.js';
import type { SaleRedis } from './redis.js';
import { inspectSale, type SaleCondition } from './recovery/inspect.js';
import { RecoveryMonitor } from './recovery/monitor.js';
import { admissionRestore } from './admission/restore.js';
import { reconcileSplit, type PartDrift } from './recovery/reconcile-split.js';

const snapshotScript = loadLuaScript(new URL('./reconcile-snapshot.lua', import.meta.url));
const applyScript = loadLuaScript(new URL('./reconcile-apply.lua', import.meta.url));

export interface SaleDrift {
  saleId: string;
  stock: number;
  /** Units Redis still offers (null: the sale is missing in Redis). */
  redisRemaining: number | null;
  /** Units Redis holds apart as offers to waitlisted buyers (waitlist/): neither stock nor orders. */
  heldOffers: number;
  /** Units held by confirmed and paid orders in the database. */
  recordedUnits: number;
  /**
   * Units of entries Redis has and the record not yet: reservations hold units, cancelled and expired
   * orders gave theirs back (negative).
   */
  inFlightUnits: number;
  /** stock - remaining - held offers - recorded - in flight: 0 when Redis and the record agree. */
  drift: number;
  /** Users Redis counts lower than the record (they could buy again past their limit). */
  buyersBelowRecord: number;
  /** Unpaid orders with a deadline that Redis neither schedules for expiry nor has settled. */
  unscheduledOrders: number;
  /**
   * How Redis stands against the record (recovery/inspect.ts): `missing` and `behind` sales are
   * rebuilt from the record by a repair (and by any running `serve` within a second).
   */
  condition: SaleCondition['kind'];
  /** The stock after repair (only with `repair`). */
  repairedRemaining?: number;
  /**
   * A split sale (shards/): each part against the record. `drift` then also counts the units of
   * transfers debited and not credited yet (`transferUnits`), which are in no part's stock.
   */
  parts?: PartDrift[];
  transferUnits?: number;
}

type Snapshot = [remaining: number, inFlight: number, users: Array<string | number>, held: number];

/**
 * Compares Redis with the record, sale by sale. A unit may briefly count as both recorded and in
 * flight (committed, not yet acknowledged), which only makes the repair undersell, never oversell.
 * With `repair`, a sale Redis lost or that came back older than the record is rebuilt from the
 * record (recovery/rebuild.ts: buyers, keys, settled orders, deadlines); otherwise Redis stock is set
 * to what the record allows, buyer counts are raised to it, and unpaid orders Redis lost track of are
 * scheduled for expiry again. Without `repair` nothing in Redis or the record changes.
 */
export async function reconcile(
  deps: { context: SaleContext; db: Database; service: SaleService },
  options: { repair?: boolean; saleIds?: string[] } = {},
): Promise<SaleDrift[]> {
  const { context, db, service } = deps;
  const { redis, scripts } = context;
  const sales = (await records.listOpenSales(db)).filter(
    (s) => !options.saleIds || options.saleIds.includes(s.id),
  );
  const report: SaleDrift[] = [];
  const recovery = options.repair
    ? new RecoveryMonitor({ context, db, admission: admissionRestore(context, db) })
    : undefined;
  try {
    for (const sale of sales) report.push(await reconcileSale(sale, recovery));
  } finally {
    await recovery?.stop();
  }
  return report;

  async function reconcileSale(sale: (typeof sales)[number], recovery: RecoveryMonitor | undefined) {
    if (sale.partTags) {
      const split = await reconcileSplit({ context, db }, sale, {
        ...(recovery ? { recovery } : {}),
      });
      const recorded = split.recordedUnits;
      const entry: SaleDrift = {
        saleId: sale.id,
        stock: sale.stock,
        redisRemaining: split.redisRemaining,
        heldOffers: 0, // a split sale has no waitlist
        recordedUnits: recorded,
        inFlightUnits: split.inFlightUnits,
        transferUnits: split.transferUnits,
        drift:
          sale.stock - (split.redisRemaining ?? 0) - recorded - split.inFlightUnits - split.transferUnits,
        buyersBelowRecord: split.parts.reduce((s, p) => s + p.buyersBelowRecord, 0),
        unscheduledOrders: split.unscheduledOrders,
        condition: split.condition,
        parts: split.parts,
      };
      if (split.parts.some((p) => p.repairedRemaining !== undefined)) {
        entry.repairedRemaining = split.parts.reduce(
          (s, p) => s + (p.repairedRemaining ?? p.redisRemaining ?? 0),
          0,
        );
      }
      return entry;
    }
    const keys = context.keys.sale(sale.id);
    const condition = await inspectSale(context, db, sale.id, keys);
    // Redis first, then the record: anything that moves in between is counted twice, never missed.
    const [seenStock, inFlight, users, held] = (await scripts.run(
      snapshotScript,
      [keys.stock, keys.stream, keys.offers],
      [ORDER_GROUP],
    )) as Snapshot;
    const recorded = (await records.getSale(db, sale.id))?.persistedSold ?? 0;
    const expected = await records.userPurchases(db, sale.id);
    for (let i = 0; i + 1 < users.length; i += 2) {
      const user = String(users[i]);
      expected.set(user, (expected.get(user) ?? 0) + Number(users[i + 1]));
    }
    const buyers = await redis.hgetall(keys.buyers);
    const below = [...expected].filter(([user, units]) => Number(buyers[user] ?? 0) < units);
    const unscheduled = await unscheduledOrders(redis, db, sale.id, keys);
    const remaining = seenStock < 0 ? null : seenStock;
    const entry: SaleDrift = {
      saleId: sale.id,
      stock: sale.stock,
      redisRemaining: remaining,
      heldOffers: held,
      recordedUnits: recorded,
      inFlightUnits: inFlight,
      drift: sale.stock - (remaining ?? 0) - held - recorded - inFlight,
      buyersBelowRecord: below.length,
      unscheduledOrders: unscheduled.length / 2,
      condition: condition.kind,
    };
    if (recovery && condition.kind !== 'ok') {
      const rebuilt = await recovery.rebuildNow(sale, condition.kind);
      if (rebuilt) entry.repairedRemaining = rebuilt.remaining;
      return entry;
    }
    if (options.repair && (entry.drift !== 0 || below.length > 0 || remaining === null)) {
      // Offers seen keep their units (an offer bought since the snapshot is an order the record or
      // the stream may count too: the repair then undersells, never oversells).
      const target = Math.max(0, sale.stock - recorded - inFlight - held);
      await service.warm(sale, target); // puts the sale back if Redis lost it entirely; else a no-op
      entry.repairedRemaining = Number(
        await scripts.run(
          applyScript,
          [keys.stock, keys.buyers, keys.restock, keys.open, keys.waitlist, keys.offers],
          [seenStock, target, service.waitlist.offerMs, ...below.flat()],
        ),
      );
    }
    if (options.repair && unscheduled.length > 0) {
      await scripts.run(lifecycleScripts.openOrders, [keys.deadlines, keys.settled], unscheduled);
    }
    return entry;
  }
}

/**
 * Confirmed orders with a deadline that Redis neither has in the sale's deadlines set nor has settled
 * (as after Redis lost data): they would never expire. Returned as open-orders.lua's arguments.
 */
async function unscheduledOrders(
  redis: SaleRedis,
  db: Database,
  saleId: string,
  keys: SaleKeys,
): Promise<Array<string | number>> {
  const { rows } = await db.query<{ id: string; user_id: string; quantity: number; pay_by: Date | string }>(
    queries.unpaidOrders,
    [saleId],
  );
  const missing: Array<string | number> = [];
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000);
    const members = chunk.map((r) => deadlineMember(r.id, r.user_id, r.quantity));
    const [scores, settled] = await Promise.all([
      redis.zmscore(keys.deadlines, ...members),
      redis.hmget(keys.settled, ...chunk.map((r) => r.id)),
    ]);
    chunk.forEach((row, j) => {
      if (scores[j] === null && settled[j] === null)
        missing.push(members[j] as string, new Date(row.pay_by).getTime());
    });
  }
  return missing;
}
