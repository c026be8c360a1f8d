import { describe, expect, it } from 'vitest';
import { checkHealth } from '../../src/sale/health.js';
import { layoutKeys, layoutOf, partOfUser, type PartKeys } from '../../src/sale/shards/layout.js';
import { readSaleStats } from '../../src/sale/stats.js';
import type { SaleView } from '../../src/sale/types.js';
import { useClusterSaleStack } from '../helpers/cluster-sale.js';
import { until } from '../helpers/until.js';

const env = useClusterSaleStack(3);

function userOf(part: number, prefix: string): string {
  for (let i = 0; ; i++) if (partOfUser(`${prefix}${i}`, 3) === part) return `${prefix}${i}`;
}

const partsOf = (sale: SaleView): PartKeys[] => layoutKeys(layoutOf(sale.id, sale.partTags));

describe('a split sale: the sold-out memory, the dashboard and the health check', () => {
  it('remembers the sale sold out only after a proof, and forgets it when any part gets a unit back', async () => {
    const sale = await env.service.createSale({ name: 'memory', stock: 3, shards: 3, payWithinSeconds: 600 });
    const orders: Array<{ user: string; id: string }> = [];
    for (const part of [0, 1, 2]) {
      const user = userOf(part, `m${part}-`);
      const result = await env.service.buy({ saleId: sale.id, userId: user, quantity: 1 });
      if (!result.ok) throw new Error(`could not buy in part ${part}: ${result.code}`);
      orders.push({ user, id: result.orderId });
    }
    // Sold out, proven; the memory comes once the process listens on every part's restock channel.
    let n = 0;
    await until('the sold-out memory', async () => {
      expect(await env.service.buy({ saleId: sale.id, userId: `late${n++}`, quantity: 1 })).toEqual({
        ok: false,
        code: 'sold_out',
      });
      return env.service.refuseFromMemory(sale.id) !== undefined;
    });
    // A cancellation in part 2 gives a unit back: its restock message makes the process forget...
    await env.pipeline().drain();
    const cancelled = orders[2] as { user: string; id: string };
    expect(await env.service.act(cancelled.id, cancelled.user, 'cancel')).toMatchObject({ ok: true });
    await until('the restock message', async () => env.service.refuseFromMemory(sale.id) === undefined);
    // ... and a buyer of part 0 gets that unit (moved from part 2).
    const buyer = userOf(0, 'again');
    expect(await env.service.buy({ saleId: sale.id, userId: buyer, quantity: 1 })).toMatchObject({
      ok: true,
    });
    await env.service.transfers.settled();
    const stocks = await Promise.all(partsOf(sale).map((keys) => env.redis.get(keys.stock)));
    expect(stocks).toEqual(['0', '0', '0']);
  });

  it('shows each part on the dashboard and sums them; the health check sees every part’s backlog', async () => {
    const sale = await env.service.createSale({ name: 'stats', stock: 30, shards: 3 });
    for (const part of [0, 0, 1]) {
      const user = userOf(part, `s${Math.random().toString(36).slice(2)}`);
      expect(await env.service.buy({ saleId: sale.id, userId: user, quantity: 1 })).toMatchObject({
        ok: true,
      });
    }
    const [stats] = (await readSaleStats({ context: env.context, db: env.db })).filter(
      (s) => s.id === sale.id,
    );
    expect(stats?.parts.map((p) => p.remaining)).toEqual([8, 9, 10]);
    expect(stats?.remaining).toBe(27);
    expect(stats?.status).toBe('active');
    // Nothing recorded yet: three entries wait, in parts 0 and 1.
    expect(stats?.pipeline.undelivered).toBe(3);
    expect(stats?.parts.map((p) => p.backlog)).toEqual([2, 1, 0]);
    const health = await checkHealth({ context: env.context, db: env.db });
    expect(health.backlog.oldestUnrecordedMs).not.toBeNull();
    await env.pipeline().drain();
    const [after] = (await readSaleStats({ context: env.context, db: env.db })).filter(
      (s) => s.id === sale.id,
    );
    expect(after?.parts.map((p) => p.backlog)).toEqual([0, 0, 0]);
    expect(after?.persistedSold).toBe(3);
  });
});
