import { DEFAULT_KEY_PREFIX, loadLuaScript, ScriptRunner } from 'lockstock/redis';
import { ORDER_GROUP, saleKeys } from './keys.js';
import type { SaleService } from './service.js';
import type { Database } from './store/db.js';
import { records } from './store/records.js';
import type { SaleRedis } from './redis.js';

const snapshotScript = loadLuaScript(new URL('./reconcile-snapshot.lua', import.meta.url));
const applyScript = loadLuaScript(new URL('./reconcile-apply.lua', import.meta.url));

export interface SaleDrift {
  saleId: string;
  stock: number;
  /** Units Redis still offers (null: the sale is missing in Redis). */
  redisRemaining: number | null;
  /** Units of confirmed orders in the database. */
  recordedUnits: number;
  /** Units reserved in Redis but not yet recorded. */
  inFlightUnits: number;
  /** stock - remaining - recorded - in flight: 0 when Redis and the record agree. */
  drift: number;
  /** Users Redis counts lower than the record (they could buy again past their limit). */
  buyersBelowRecord: number;
  /** The stock after repair (only with `repair`). */
  repairedRemaining?: number;
}

/**
 * Compares Redis with the record, sale by sale. A unit may briefly count as both recorded and in
 * flight (committed, not yet acknowledged), which only makes the repair undersell, never oversell.
 * With `repair`, Redis stock is set to what the record allows and buyer counts are raised to it.
 */
export async function reconcile(
  deps: { redis: SaleRedis; db: Database; service: SaleService },
  options: { repair?: boolean; keyPrefix?: string; saleIds?: string[] } = {},
): Promise<SaleDrift[]> {
  const { redis, db, service } = deps;
  const scripts = new ScriptRunner(redis);
  const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  const sales = (await records.listOpenSales(db)).filter(
    (s) => !options.saleIds || options.saleIds.includes(s.id),
  );
  const report: SaleDrift[] = [];
  for (const sale of sales) {
    const keys = saleKeys(sale.id, prefix);
    // Redis first, then the record: anything that moves in between is counted twice, never missed.
    const [seenStock, inFlight] = (await scripts.run(
      snapshotScript,
      [keys.stock, keys.stream],
      [ORDER_GROUP],
    )) as [number, number];
    const recorded = (await records.getSale(db, sale.id))?.persistedSold ?? 0;
    const holdings = await records.userPurchases(db, sale.id);
    const buyers = await redis.hgetall(keys.buyers);
    const below = [...holdings].filter(([user, units]) => Number(buyers[user] ?? 0) < units);
    const remaining = seenStock < 0 ? null : seenStock;
    const entry: SaleDrift = {
      saleId: sale.id,
      stock: sale.stock,
      redisRemaining: remaining,
      recordedUnits: recorded,
      inFlightUnits: inFlight,
      drift: sale.stock - (remaining ?? 0) - recorded - inFlight,
      buyersBelowRecord: below.length,
    };
    if (options.repair && (entry.drift !== 0 || below.length > 0 || remaining === null)) {
      const target = Math.max(0, sale.stock - recorded - inFlight);
      await service.warm(sale, target); // puts the sale back if Redis lost it entirely; else a no-op
      entry.repairedRemaining = Number(
        await scripts.run(
          applyScript,
          [keys.stock, keys.buyers, keys.restock],
          [seenStock, target, ...below.flat()],
        ),
      );
    }
    report.push(entry);
  }
  return report;
}
