import { ScriptRunner } from 'lockstock/redis';
import { describe, expect, it } from 'vitest';
import { ExpirySweeper } from '../../src/sale/lifecycle/sweeper.js';
import { reconcile } from '../../src/sale/reconcile.js';
import { RecoveryMonitor } from '../../src/sale/recovery/monitor.js';
import { admissionRestore } from '../../src/sale/admission/restore.js';
import { layoutKeys, layoutOf, partOfUser, type PartKeys } from '../../src/sale/shards/layout.js';
import { recordLayouts } from '../../src/sale/shards/record-layouts.js';
import { partScripts } from '../../src/sale/shards/scripts.js';
import type { SaleView } from '../../src/sale/types.js';
import { useClusterSaleStack } from '../helpers/cluster-sale.js';
import { until } from '../helpers/until.js';

const env = useClusterSaleStack(3);

function usersOf(part: number, parts: number, count: number, prefix: string): string[] {
  const users: string[] = [];
  for (let i = 0; users.length < count; i++) {
    if (partOfUser(`${prefix}${i}`, parts) === part) users.push(`${prefix}${i}`);
  }
  return users;
}

const partsOf = (sale: SaleView): PartKeys[] => layoutKeys(layoutOf(sale.id, sale.partTags));

async function buyAll(sale: SaleView, users: readonly string[]) {
  const results = [];
  for (const userId of users) results.push(await env.service.buy({ saleId: sale.id, userId, quantity: 1 }));
  await env.service.transfers.settled();
  return results;
}

/** What Redis holds of a part that a rebuild must restore. */
async function partState(keys: PartKeys) {
  return {
    stock: await env.redis.get(keys.stock),
    inflight: Number((await env.redis.get(keys.inflight)) ?? 0),
    buyers: await env.redis.hgetall(keys.buyers),
    credits: await env.redis.hgetall(keys.credits),
    pending: Object.keys(await env.redis.hgetall(keys.transfers)).sort(),
  };
}

/** Redis losing one part (its slot's master restarted empty, say): every key of the part gone. */
async function losePart(keys: PartKeys): Promise<void> {
  const idem = await scanAll(`ls:{${keys.tag}}:idem:*`);
  await env.redis.del(
    keys.stock,
    keys.notBefore,
    keys.open,
    keys.buyers,
    keys.stream,
    keys.settled,
    keys.deadlines,
    keys.version,
    keys.inflight,
    keys.transfers,
    keys.credits,
    ...idem,
  );
}

async function scanAll(pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of env.redis.nodes('master')) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  return found;
}

async function recover(): Promise<RecoveryMonitor> {
  const monitor = new RecoveryMonitor({
    context: env.context,
    db: env.db,
    admission: admissionRestore(env.context, env.db),
    checkEveryMs: 0,
  });
  await monitor.start();
  await monitor.stop();
  return monitor;
}

describe('a split sale recovered, reconciled and settled part by part', () => {
  it('rebuilds a lost donor part from the record: stock, buyers, a pending transfer; the sale then sells exactly its stock', async () => {
    const sale = await env.service.createSale({ name: 'donor lost', stock: 60, shards: 3 });
    const parts = partsOf(sale);
    const [p0, p1] = parts as [PartKeys, PartKeys, PartKeys];
    await buyAll(sale, usersOf(0, 3, 30, 'a')); // part 0's 20, then 10 from the others
    await buyAll(sale, usersOf(1, 3, 5, 'b'));
    // A transfer out of part 1 whose process died before the credit: debited, recorded, pending.
    const scripts = new ScriptRunner(env.redis);
    const stranded = String(Date.now());
    const units = Number(
      await scripts.run(
        partScripts.transferOut,
        [p1.stock, p1.inflight, p1.transfers, p1.version, p1.stream, p1.recovering],
        [stranded, 0, 1],
      ),
    );
    expect(units).toBeGreaterThan(0);
    await env.pipeline().drain();
    const before = await partState(p1);
    expect(before.pending).toEqual([stranded]);

    await losePart(p1);
    await recover();
    const after = await partState(p1);
    expect(after).toEqual(before);

    // The stranded transfer is finished once (the sweeper finds it: debited "at 0 ms"), then the
    // sale sells out to buyers of every part: exactly 60 units recorded, none rejected.
    const sweeper = new ExpirySweeper(env.context, { layouts: recordLayouts(env.context, env.db) });
    expect((await sweeper.sweep()).expired).toBe(0);
    expect(await env.redis.hget(p0.credits, stranded)).toBe('credited');
    expect(await env.redis.hlen(p1.transfers)).toBe(0);
    const rest = [...usersOf(0, 3, 20, 'c'), ...usersOf(1, 3, 20, 'c'), ...usersOf(2, 3, 20, 'c')];
    const results = await buyAll(sale, rest);
    expect(results.filter((r) => r.ok)).toHaveLength(60 - 35);
    await env.pipeline().drain();
    const { rows } = await env.db.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM orders WHERE sale_id = $1 GROUP BY status',
      [sale.id],
    );
    expect(rows).toEqual([{ status: 'confirmed', n: 60 }]);
    const [drift] = await reconcile(
      { context: env.context, db: env.db, service: env.service },
      { saleIds: [sale.id] },
    );
    expect(drift).toMatchObject({ drift: 0, redisRemaining: 0, recordedUnits: 60, transferUnits: 0 });
  });

  it('rebuilds a lost receiver part with its credits: a finished transfer is never credited again', async () => {
    const sale = await env.service.createSale({
      name: 'receiver lost',
      stock: 30,
      shards: 3,
      perUserLimit: 2,
    });
    const [p0] = partsOf(sale) as [PartKeys];
    await buyAll(sale, usersOf(0, 3, 14, 'r')); // part 0's 10, then 4 moved in
    await env.pipeline().drain();
    const before = await partState(p0);
    expect(Object.keys(before.credits).length).toBeGreaterThan(0);
    await losePart(p0);
    await recover();
    expect(await partState(p0)).toEqual(before);
    const scripts = new ScriptRunner(env.redis);
    const [credited] = Object.keys(before.credits) as [string];
    const stock = await env.redis.get(p0.stock);
    expect(
      await scripts.run(
        partScripts.transferIn,
        [p0.stock, p0.credits, p0.version, p0.stream, p0.recovering],
        [credited, 1, 5],
      ),
    ).toBe('credited');
    expect(await env.redis.get(p0.stock)).toBe(stock);
    // A buyer of part 0 already holding 1 may buy 1 more, not 2: the limit came back with the buyers.
    const [holder] = Object.keys(before.buyers) as [string];
    expect(await env.service.buy({ saleId: sale.id, userId: holder, quantity: 2 })).toEqual({
      ok: false,
      code: 'limit_reached',
    });
  });

  // A master wiped (FLUSHALL, or restarted empty) before any pipeline read the receiver's credit: the
  // donor finished the transfer (its pending entry gone), the credit and its stream entry are lost.
  // The units left the donor for good; the rebuilt receiver must hold them, or the sale sells less
  // than its stock and its transfer steps never balance.
  it('rebuilds a receiver part that lost a credit no pipeline had read: the units are not lost', async () => {
    const sale = await env.service.createSale({ name: 'credit lost', stock: 30, shards: 3 });
    const parts = partsOf(sale);
    const [p0] = parts as [PartKeys];
    await buyAll(sale, usersOf(0, 3, 14, 'l')); // part 0's 10, then units moved in
    const credits = Object.keys(await env.redis.hgetall(p0.credits));
    expect(credits.length).toBeGreaterThan(0);
    expect(await Promise.all(parts.map((k) => env.redis.hlen(k.transfers)))).toEqual([0, 0, 0]);
    await losePart(p0); // its 14 orders and its credits, unread
    // The donors' transfer-out entries reach the record (part 0's stream, gone, lent for the drain).
    await env.redis.xgroup('CREATE', p0.stream, 'order-writers', '0', 'MKSTREAM');
    await env.pipeline().drain();
    await env.redis.del(p0.stream);
    await recover();
    // Nothing of part 0 was recorded, so it holds its share and every unit it was credited.
    const left = await Promise.all(parts.map(async (k) => Number(await env.redis.get(k.stock))));
    expect(left.reduce((a, b) => a + b, 0)).toBe(30);
    const [drift] = await reconcile(
      { context: env.context, db: env.db, service: env.service },
      { saleIds: [sale.id] },
    );
    expect(drift).toMatchObject({ drift: 0, recordedUnits: 0, transferUnits: 0 });
    // The lost credits are credits again (never made twice), and their steps reach the record.
    expect(Object.keys(await env.redis.hgetall(p0.credits)).sort()).toEqual(credits.sort());
    await env.pipeline().drain();
    const { rows } = await env.db.query<{ kind: string; n: number }>(
      'SELECT kind, count(*)::int AS n FROM stock_moves WHERE sale_id = $1 GROUP BY kind ORDER BY kind',
      [sale.id],
    );
    expect(rows).toEqual([
      { kind: 'in', n: credits.length },
      { kind: 'out', n: credits.length },
    ]);
  });

  it('reconciles per part: a drifted part is reported and repaired to what the record allows', async () => {
    const sale = await env.service.createSale({ name: 'drifted', stock: 30, shards: 3 });
    const parts = partsOf(sale);
    await buyAll(sale, usersOf(2, 3, 12, 'd'));
    await env.pipeline().drain();
    const deps = { context: env.context, db: env.db, service: env.service };
    const [clean] = await reconcile(deps, { saleIds: [sale.id] });
    expect(clean).toMatchObject({ drift: 0, condition: 'ok', redisRemaining: 18 });
    expect(clean?.parts?.every((p) => p.redisRemaining === p.expectedRemaining)).toBe(true);

    const p1 = parts[1] as PartKeys;
    const right = Number(await env.redis.get(p1.stock));
    await env.redis.incrby(p1.stock, 5); // units from nowhere: an oversell waiting to happen
    const [found] = await reconcile(deps, { saleIds: [sale.id] });
    expect(found?.drift).toBe(-5);
    expect(found?.parts?.[1]).toMatchObject({ redisRemaining: right + 5, expectedRemaining: right });
    const [repaired] = await reconcile(deps, { saleIds: [sale.id], repair: true });
    expect(repaired?.parts?.[1]?.repairedRemaining).toBe(right);
    expect(Number(await env.redis.get(p1.stock))).toBe(right);
    const [after] = await reconcile(deps, { saleIds: [sale.id] });
    expect(after?.drift).toBe(0);
  });

  it("pays, cancels and expires orders in their buyer's part; units come back there", async () => {
    const sale = await env.service.createSale({
      name: 'lifecycle',
      stock: 9,
      shards: 3,
      payWithinSeconds: 1,
    });
    const parts = partsOf(sale);
    const [payer, canceller, sleeper] = ['pay', 'cancel', 'sleep'].map(
      (prefix) => usersOf(1, 3, 1, prefix)[0] as string,
    ) as [string, string, string];
    const p1 = parts[1] as PartKeys;
    const orders: string[] = [];
    for (const userId of [payer, canceller, sleeper]) {
      const result = await env.service.buy({ saleId: sale.id, userId, quantity: 1 });
      if (!result.ok) throw new Error(`could not buy: ${result.code}`);
      orders.push(result.orderId);
    }
    await env.pipeline().drain();
    expect(await env.redis.get(p1.stock)).toBe('0');
    const version = await env.redis.get(p1.version);
    expect(await env.service.act(orders[0] as string, payer, 'pay')).toMatchObject({ ok: true });
    expect(await env.service.act(orders[1] as string, canceller, 'cancel')).toMatchObject({ ok: true });
    expect(await env.redis.get(p1.stock)).toBe('1'); // the cancelled unit is back in its part
    expect(await env.redis.hget(p1.settled, orders[1] as string)).toBe('cancelled');
    expect(await env.redis.get(p1.version)).not.toBe(version);
    // The sleeper's order expires by the sweeper, in part 1.
    const sweeper = new ExpirySweeper(env.context, { layouts: recordLayouts(env.context, env.db) });
    await until('the sweeper to expire the unpaid order', async () => {
      await sweeper.sweep();
      return (await env.redis.hget(p1.settled, orders[2] as string)) === 'expired';
    });
    expect(await env.redis.get(p1.stock)).toBe('2');
    await env.pipeline().drain();
    const { rows } = await env.db.query<{ status: string }>(
      'SELECT status FROM orders WHERE sale_id = $1 ORDER BY id',
      [sale.id],
    );
    expect(rows.map((r) => r.status)).toEqual(['paid', 'cancelled', 'expired']);
    expect(await env.service.getOrder(orders[2] as string)).toMatchObject({ status: 'expired' });
  });
});
