import type { Order, OrderStatus, Sale } from '../types.js';
import type { Queryable } from './db.js';
import { queries } from './queries.js';

interface SaleRow {
  id: string;
  name: string;
  stock: number;
  sold?: number;
  per_user_limit: number;
  starts_at: Date | string;
  ends_at: Date | string;
  pay_within_seconds?: number | null;
  part_tags?: string[] | null;
  admission?: string;
}

const toSale = (row: SaleRow): Sale & { persistedSold: number } => ({
  id: row.id,
  name: row.name,
  stock: row.stock,
  perUserLimit: row.per_user_limit,
  startsAt: new Date(row.starts_at),
  endsAt: new Date(row.ends_at),
  ...(row.pay_within_seconds == null ? {} : { payWithinSeconds: row.pay_within_seconds }),
  ...(row.part_tags == null ? {} : { partTags: row.part_tags }),
  ...(row.admission === 'raffle' ? { admission: 'raffle' as const } : {}),
  persistedSold: row.sold ?? 0,
});

/** A sale with what the record says about it: units held (persistedSold), orders, buyers. */
export interface RecordedSale extends Sale {
  persistedSold: number;
  confirmedOrders: number;
  rejectedOrders: number;
  /** Users holding at least one unit. */
  buyers: number;
}

/** A sale as the dashboard reads it from the record: with the units its orders gave back. */
export interface DashboardRecord extends RecordedSale {
  /** Units of cancelled orders (back on sale). */
  cancelledUnits: number;
  /** Units of orders not paid in time (back on sale). */
  expiredUnits: number;
}

/** A raffle sale's draw settings, recorded with it (raffle/raffles.ts newRaffle). */
export interface NewRaffleRecord {
  readonly seed: Buffer;
  readonly seedHash: string;
  readonly drawAt: Date;
  /** The beacon fixed in its commitment (raffle/beacon.ts BeaconChain, kept as JSON); none: commit–reveal only. */
  readonly beacon?: object;
}

/** Sales and orders as recorded in the database. */
export const records = {
  /** Inserts a sale; a raffle sale (`sale.raffle` given) with its raffle, in the same statement. */
  async insertSale(db: Queryable, sale: Omit<Sale, 'id'> & { raffle?: NewRaffleRecord }): Promise<Sale> {
    const { raffle } = sale;
    const { rows } = await db.query<SaleRow>(queries.insertSale, [
      sale.name,
      sale.stock,
      sale.startsAt.toISOString(),
      sale.endsAt.toISOString(),
      sale.perUserLimit,
      sale.payWithinSeconds ?? null,
      raffle ? 'raffle' : 'first_come',
      raffle?.seed ?? null,
      raffle?.seedHash ?? null,
      raffle?.drawAt.toISOString() ?? null,
      raffle?.beacon ? JSON.stringify(raffle.beacon) : null,
    ]);
    return toSale(rows[0] as SaleRow);
  },

  /** Records where a new split sale's parts live (in the transaction that inserted it). */
  async setPartTags(db: Queryable, id: string, tags: readonly string[]): Promise<void> {
    await db.query(queries.setPartTags, [id, tags]);
  },

  async getSale(db: Queryable, id: string): Promise<(Sale & { persistedSold: number }) | undefined> {
    const { rows } = await db.query<SaleRow>(queries.getSale, [id]);
    return rows[0] && toSale(rows[0]);
  },

  async listOpenSales(db: Queryable): Promise<Array<Sale & { persistedSold: number }>> {
    const { rows } = await db.query<SaleRow>(queries.listOpenSales);
    return rows.map(toSale);
  },

  /** A page of sales, newest first: ids below `before`, within a time window (see list-sales.sql). */
  async listSales(
    db: Queryable,
    page: { before: string | undefined; window: 'scheduled' | 'open' | 'ended' | undefined; limit: number },
  ): Promise<Array<Sale & { persistedSold: number }>> {
    const { rows } = await db.query<SaleRow>(queries.listSales, [
      page.before ?? null,
      page.window ?? null,
      page.limit,
    ]);
    return rows.map(toSale);
  },

  async getOrder(db: Queryable, id: string): Promise<Order | undefined> {
    const { rows } = await db.query<{
      id: string;
      sale_id: string;
      user_id: string;
      quantity: number;
      status: Exclude<OrderStatus, 'reserved'>;
      reject_reason: string | null;
      pay_by: Date | string | null;
    }>(queries.getOrder, [id]);
    const row = rows[0];
    if (!row) return undefined;
    return {
      orderId: row.id,
      saleId: row.sale_id,
      userId: row.user_id,
      quantity: row.quantity,
      status: row.status,
      ...(row.reject_reason ? { reason: row.reject_reason } : {}),
      ...(row.pay_by === null ? {} : { payBy: new Date(row.pay_by) }),
    };
  },

  async saleCounts(db: Queryable, saleId: string) {
    const { rows } = await db.query<{
      confirmed_units: number;
      confirmed_orders: number;
      rejected_orders: number;
      buyers: number;
    }>(queries.saleCounts, [saleId]);
    const row = rows[0] as NonNullable<(typeof rows)[0]>;
    return {
      confirmedUnits: row.confirmed_units,
      confirmedOrders: row.confirmed_orders,
      rejectedOrders: row.rejected_orders,
      buyers: row.buyers,
    };
  },

  /** The newest `limit` sales not ended more than a day ago, with their recorded totals (dashboard). */
  async dashboardSales(db: Queryable, limit: number): Promise<DashboardRecord[]> {
    const { rows } = await db.query<
      SaleRow & {
        confirmed_orders: number;
        rejected_orders: number;
        cancelled_units: number;
        expired_units: number;
        buyers: number;
      }
    >(queries.dashboardSales, [limit]);
    return rows.map((row) => ({
      ...toSale(row),
      confirmedOrders: row.confirmed_orders,
      rejectedOrders: row.rejected_orders,
      cancelledUnits: row.cancelled_units,
      expiredUnits: row.expired_units,
      buyers: row.buyers,
    }));
  },

  async userPurchases(db: Queryable, saleId: string): Promise<Map<string, number>> {
    const { rows } = await db.query<{ user_id: string; quantity: number }>(queries.userPurchases, [saleId]);
    return new Map(rows.map((r) => [r.user_id, r.quantity]));
  },
};
