import { describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { layoutKey, layoutKeys, layoutOf, partOfUser, type PartKeys } from '../../src/sale/shards/layout.js';
import { clusterMasters } from '../../src/sale/shards/placement.js';
import type { SaleView } from '../../src/sale/types.js';
import { useClusterSaleStack } from '../helpers/cluster-sale.js';

const env = useClusterSaleStack(3);

/** `count` user ids whose part (of `parts`) is `part`. */
function usersOf(part: number, parts: number, count: number, prefix = 'u'): string[] {
  const users: string[] = [];
  for (let i = 0; users.length < count; i++) {
    if (partOfUser(`${prefix}${i}`, parts) === part) users.push(`${prefix}${i}`);
  }
  return users;
}

function partsOf(sale: SaleView): PartKeys[] {
  return layoutKeys(layoutOf(sale.id, sale.partTags));
}

/** Every part's stock, inflight and pending transfers, read from Redis. */
async function partStates(sale: SaleView) {
  return Promise.all(
    partsOf(sale).map(async (keys) => ({
      stock: Number(await env.redis.get(keys.stock)),
      inflight: Number((await env.redis.get(keys.inflight)) ?? 0),
      pending: await env.redis.hlen(keys.transfers),
    })),
  );
}

describe('a sale split across the masters of a Redis Cluster', () => {
  it('places its K parts on K distinct masters by slot ownership, and records where', async () => {
    const sale = await env.service.createSale({ name: 'placed', stock: 30, shards: 3 });
    expect(sale.shards).toBe(3);
    const masters = await clusterMasters(env.redis);
    expect(masters).toHaveLength(3);
    const owners = await Promise.all(
      partsOf(sale).map(async (keys) => {
        const slot = Number(await env.redis.call('CLUSTER', 'KEYSLOT', keys.stock));
        return masters.findIndex((m) => m.ranges.some(([from, to]) => slot >= from && slot <= to));
      }),
    );
    expect(new Set(owners).size).toBe(3);
    const { rows } = await env.db.query<{ part_tags: string[] }>(
      'SELECT part_tags FROM sales WHERE id = $1',
      [sale.id],
    );
    expect(rows[0]?.part_tags).toEqual(sale.partTags);
    expect(await env.redis.get(layoutKey(sale.id))).toBe(sale.partTags?.join(','));
    // Each part holds its share; the sale's own tag has no stock (a one-part script there finds no sale).
    expect((await partStates(sale)).map((s) => s.stock)).toEqual([10, 10, 10]);
    expect(await env.redis.exists(saleKeys(sale.id).stock)).toBe(0);
  });

  it('keeps a one-part sale as it was: its own tag, no layout, no transfer keys', async () => {
    const sale = await env.service.createSale({ name: 'one part', stock: 3 });
    expect(sale.shards).toBe(1);
    expect(await env.redis.get(saleKeys(sale.id).stock)).toBe('3');
    expect(await env.redis.exists(layoutKey(sale.id))).toBe(0);
    expect((await env.service.buy({ saleId: sale.id, userId: 'solo', quantity: 1 })).ok).toBe(true);
    expect(await env.redis.get(saleKeys(sale.id).stock)).toBe('2');
  });

  it('routes each buyer to one part: limit and Idempotency-Key exact there', async () => {
    const sale = await env.service.createSale({ name: 'routed', stock: 300, shards: 3, perUserLimit: 2 });
    const users = Array.from({ length: 30 }, (_, i) => `r${i}`);
    const first = await Promise.all(
      users.map((userId) => env.service.buy({ saleId: sale.id, userId, quantity: 2, idempotencyKey: 'k' })),
    );
    expect(first.every((r) => r.ok && !r.duplicate)).toBe(true);
    const again = await Promise.all(
      users.map((userId) => env.service.buy({ saleId: sale.id, userId, quantity: 2, idempotencyKey: 'k' })),
    );
    expect(again.map((r) => r.ok && r.duplicate && r.orderId)).toEqual(first.map((r) => r.ok && r.orderId));
    const over = await Promise.all(
      users.map((userId) => env.service.buy({ saleId: sale.id, userId, quantity: 1 })),
    );
    expect(over.every((r) => !r.ok && r.code === 'limit_reached')).toBe(true);
    for (const keys of partsOf(sale)) {
      const buyers = await env.redis.hgetall(keys.buyers);
      for (const user of Object.keys(buyers)) expect(partOfUser(user, 3)).toBe(keys.part);
    }
    await env.pipeline().drain();
    const { rows } = await env.db.query<{ user_id: string; part: number; stream_id: string }>(
      'SELECT user_id, part, stream_id FROM orders WHERE sale_id = $1',
      [sale.id],
    );
    expect(rows).toHaveLength(30);
    for (const row of rows) {
      expect(row.part).toBe(partOfUser(row.user_id, 3));
      expect(row.stream_id).toMatch(new RegExp(`^\\d+-\\d+@${row.part}$`));
    }
    expect(await env.service.getSale(sale.id)).toMatchObject({ remaining: 240, sold: 60, shards: 3 });
  });

  it('moves units into a part that runs dry, and says sold out only when every part is', async () => {
    const sale = await env.service.createSale({ name: 'dry', stock: 30, shards: 3 });
    // Every buyer in part 0: the other parts' 20 units must come to them.
    const buyers = usersOf(0, 3, 40, 'dry');
    const results = [];
    for (const userId of buyers)
      results.push(await env.service.buy({ saleId: sale.id, userId, quantity: 1 }));
    expect(results.filter((r) => r.ok)).toHaveLength(30);
    expect(results.slice(30).every((r) => !r.ok && r.code === 'sold_out')).toBe(true);
    await env.service.transfers.settled();
    const states = await partStates(sale);
    expect(states.map((s) => s.stock)).toEqual([0, 0, 0]);
    expect(states.every((s) => s.inflight === 0 && s.pending === 0)).toBe(true);
    await env.pipeline().drain();
    const { rows: moves } = await env.db.query<{ kind: string; n: number; units: number }>(
      'SELECT kind, count(*)::int AS n, sum(units)::int AS units FROM stock_moves WHERE sale_id = $1 GROUP BY kind ORDER BY kind',
      [sale.id],
    );
    // Every debit credited once: as many units in as out, and the 20 of parts 1 and 2 moved.
    const out = moves.find((m) => m.kind === 'out');
    const into = moves.find((m) => m.kind === 'in');
    expect(out?.units).toBe(into?.units);
    expect(out?.n).toBe(into?.n);
    expect(out?.units).toBeGreaterThanOrEqual(20);
    const { rows: sold } = await env.db.query<{ sold: number }>('SELECT sold FROM sales WHERE id = $1', [
      sale.id,
    ]);
    expect(sold[0]?.sold).toBe(30);
    expect(await env.service.getSale(sale.id)).toMatchObject({ remaining: 0, sold: 30, status: 'sold_out' });
  });

  it('finishes a transfer left after its debit (the process died), crediting it once', async () => {
    const sale = await env.service.createSale({ name: 'left', stock: 12, shards: 3 });
    const [p0, p1] = partsOf(sale) as [PartKeys, PartKeys];
    // A debit of part 1 for part 0 whose process died before the credit: pending, 4 units in flight.
    const other = await env.instance();
    const { partScripts } = await import('../../src/sale/shards/scripts.js');
    const { ScriptRunner } = await import('lockstock/redis');
    const scripts = new ScriptRunner(other.redis);
    const id = other.ids.next();
    expect(
      await scripts.run(
        partScripts.transferOut,
        [p1.stock, p1.inflight, p1.transfers, p1.version, p1.stream, p1.recovering],
        [id, 0, 1],
      ),
    ).toBe(2);
    expect(await env.redis.get(p1.inflight)).toBe('2');
    // Part 0's buyers take its 4 and part 2's 4; then units are only in flight: finished, then sold.
    const buyers = usersOf(0, 3, 14, 'left');
    const results = [];
    for (const userId of buyers)
      results.push(await env.service.buy({ saleId: sale.id, userId, quantity: 1 }));
    expect(results.filter((r) => r.ok)).toHaveLength(12);
    expect(results.slice(12).every((r) => !r.ok && r.code === 'sold_out')).toBe(true);
    await env.service.transfers.settled();
    expect(await env.redis.hget(p0.credits, id)).toBe('credited');
    expect(await env.redis.hlen(p1.transfers)).toBe(0);
    // A second finish credits nothing more.
    expect(
      await scripts.run(
        partScripts.transferIn,
        [p0.stock, p0.credits, p0.version, p0.stream, p0.recovering],
        [id, 1, 2],
      ),
    ).toBe('credited');
    expect((await partStates(sale)).map((s) => s.stock)).toEqual([0, 0, 0]);
  });

  it('sells exactly the stock to buyers of several processes, none told sold out while units were left', async () => {
    const sale = await env.service.createSale({ name: 'crowd', stock: 300, shards: 3 });
    const processes = [env.service, (await env.instance()).service, (await env.instance()).service];
    // Uneven demand: half the buyers in part 0, so transfers happen while the others still sell.
    const buyers = [...usersOf(0, 3, 450, 'c'), ...usersOf(1, 3, 225, 'c'), ...usersOf(2, 3, 225, 'c')];
    const answers: Array<{ user: string; ok: boolean; code?: string; at: number }> = [];
    let next = 0;
    const lanes = Array.from({ length: 48 }, async (_, lane) => {
      for (let i = next++; i < buyers.length; i = next++) {
        const user = buyers[i] as string;
        const result = await (processes[lane % 3] as typeof env.service).buy({
          saleId: sale.id,
          userId: user,
          quantity: 1,
        });
        answers.push({ user, ok: result.ok, ...(result.ok ? {} : { code: result.code }), at: Date.now() });
      }
    });
    await Promise.all(lanes);
    expect(answers.filter((a) => a.ok)).toHaveLength(300);
    expect(answers.filter((a) => !a.ok).every((a) => a.code === 'sold_out')).toBe(true);
    await Promise.all(processes.map((p) => p.transfers.settled()));
    await env.pipeline().drain();
    const { rows } = await env.db.query<{ user_id: string; reserved_at: Date }>(
      "SELECT user_id, reserved_at FROM orders WHERE sale_id = $1 AND status = 'confirmed'",
      [sale.id],
    );
    expect(rows).toHaveLength(300);
    expect(new Set(rows.map((r) => r.user_id)).size).toBe(300);
    // No unit was reserved (Redis time, the entry's id) after a buyer had been told sold out.
    const lastReserved = Math.max(...rows.map((r) => new Date(r.reserved_at).getTime()));
    const firstSoldOut = Math.min(...answers.filter((a) => !a.ok).map((a) => a.at));
    expect(lastReserved).toBeLessThanOrEqual(firstSoldOut);
    expect((await partStates(sale)).every((s) => s.stock === 0 && s.inflight === 0 && s.pending === 0)).toBe(
      true,
    );
    // Units did move (part 0's buyers were half the crowd), and buyers waited for them: measured.
    const { rows: moved } = await env.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM stock_moves WHERE sale_id = $1 AND kind = 'in'",
      [sale.id],
    );
    expect(moved[0]?.n).toBeGreaterThan(0);
    const waited = (await env.metrics.transferWait.get()).values.find(
      (v) => v.metricName === 'lockstock_sale_transfer_wait_seconds_count' && v.labels.outcome === 'reserved',
    );
    expect(waited?.value).toBeGreaterThan(0);
  });
});
