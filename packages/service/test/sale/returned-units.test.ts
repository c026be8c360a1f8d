import { describe, expect, it } from 'vitest';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

/**
 * A unit given back (an order cancelled) and taken again at once, in a sold-out first-come sale,
 * recorded by several pipeline consumers in parallel: each consumer reads other entries of the same
 * stream, so the purchase may reach the record before the cancellation that freed its unit. The record
 * must not reject an order Redis accepted (its buyer was told 202) because it saw them out of order.
 * Judged from PostgreSQL rows.
 */
const env = useSaleStack();

const STOCK = 4;
const ROUNDS = 12;
const CONSUMERS = 4;

async function statusesOf(orderIds: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await env.db.query<{ id: string; status: string }>(
    'SELECT id::text AS id, status FROM orders WHERE id::text = ANY($1)',
    [orderIds],
  );
  return new Map(rows.map((r) => [r.id, r.status]));
}

async function recorded(orderIds: readonly string[]): Promise<Map<string, string>> {
  let statuses = new Map<string, string>();
  await until(
    'the orders recorded',
    async () => {
      statuses = await statusesOf(orderIds);
      return statuses.size === orderIds.length;
    },
    20_000,
  );
  return statuses;
}

describe('units given back and taken again, recorded by several consumers', () => {
  it('no order told 202 is rejected by the record: a purchase of a returned unit is never decided before the return', async () => {
    const sale = await env.service.createSale({
      name: 'returned units',
      stock: STOCK,
      payWithinSeconds: 600,
    });
    // Batches of one entry: a sale's entries spread over all consumers, recorded in parallel.
    for (let i = 0; i < CONSUMERS; i++) env.pipeline({ batchSize: 1, blockMs: 50 }).start();
    let user = 0;
    const buy = async () => {
      const userId = `u${user++}`;
      const result = await env.service.buy({ saleId: sale.id, userId, quantity: 1 });
      if (!result.ok) throw new Error(`${userId} could not buy a returned unit: ${result.code}`);
      return { orderId: result.orderId, userId };
    };
    const accepted: string[] = [];
    let holders = await Promise.all(Array.from({ length: STOCK }, buy));
    accepted.push(...holders.map((h) => h.orderId));
    await recorded(accepted);
    for (let round = 0; round < ROUNDS; round++) {
      // Every holder cancels and a new buyer takes the unit right after: all started before any is awaited.
      const next = await Promise.all(
        holders.map(async (holder) => {
          const cancelled = await env.service.act(holder.orderId, holder.userId, 'cancel');
          if (!cancelled.ok && cancelled.code === 'order_rejected')
            throw new Error(`order ${holder.orderId}, accepted by Redis (202), was rejected by the record`);
          if (!cancelled.ok) throw new Error(`could not cancel: ${cancelled.code}`);
          return buy();
        }),
      );
      holders = next;
      accepted.push(...holders.map((h) => h.orderId));
      await recorded(accepted); // the new orders must be recorded before they can be cancelled
    }
    const statuses = await recorded(accepted);
    const rejected = accepted.filter((id) => statuses.get(id) === 'rejected');
    expect(rejected).toEqual([]);
    const { rows } = await env.db.query<{ sold: number }>('SELECT sold FROM sales WHERE id = $1', [sale.id]);
    expect(rows[0]?.sold).toBe(STOCK);
    const confirmed = [...statuses.values()].filter((s) => s === 'confirmed').length;
    expect(confirmed).toBe(STOCK);
    expect([...statuses.values()].filter((s) => s === 'cancelled').length).toBe(STOCK * ROUNDS);
  }, 30_000);
});
