import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionRestore } from '../../src/sale/admission/restore.js';
import { reconcile } from '../../src/sale/reconcile.js';
import { ExpirySweeper } from '../../src/sale/lifecycle/sweeper.js';
import { RecoveryMonitor } from '../../src/sale/recovery/monitor.js';
import { SaleService } from '../../src/sale/service.js';
import { records } from '../../src/sale/store/records.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

/**
 * The waitlist of a sold-out first-come sale (sale/waitlist/), on real Redis and PostgreSQL: who may
 * join, where a returned unit goes (an offer to the head, never the open market), an offer that
 * lapses or is declined passing on, and the line coming back after Redis loses the sale. Judged from
 * Redis's answers and the record's orders.
 */
const env = useSaleStack();
/** The shortest offer window there is: lapses are observed, never waited for by a sleep. */
const OFFER_MS = 1000;
let service: SaleService;

beforeAll(() => {
  service = new SaleService({
    context: env.context,
    db: env.db,
    nextOrderId: () => String(BigInt(Date.now()) * 4096n + BigInt(counter++)),
    waitlistOfferMs: OFFER_MS,
  });
});
afterAll(async () => {
  await service.close();
});
let counter = 0;

async function recordedOrders(saleId: string): Promise<Array<{ user_id: string; id: string }>> {
  const { rows } = await env.db.query<{ user_id: string; id: string }>(
    "SELECT user_id, id::text AS id FROM orders WHERE sale_id = $1 AND status = 'confirmed' ORDER BY id",
    [saleId],
  );
  return rows;
}

/** A sold-out sale of `stock` units, each held by an unpaid order of holder0.., recorded. */
async function soldOutSale(stock: number) {
  const sale = await service.createSale({ name: 'waitlist', stock, payWithinSeconds: 600 });
  const orders: string[] = [];
  for (let i = 0; i < stock; i++) {
    const bought = await service.buy({ saleId: sale.id, userId: `holder${i}`, quantity: 1 });
    if (!bought.ok) throw new Error(`holder${i}: ${bought.code}`);
    orders.push(bought.orderId);
  }
  await until('the holders recorded', async () => (await recordedOrders(sale.id)).length === stock);
  return { sale, orders };
}

describe('a first-come sale’s waitlist', () => {
  beforeAll(() => {
    env.pipeline().start();
  });

  it('refuses to seat a buyer while units are on sale, and keeps one place per buyer', async () => {
    const sale = await service.createSale({ name: 'waitlist, on sale', stock: 1 });
    expect(await service.waitlist.join(sale.id, 'early')).toEqual({ ok: false, code: 'not_sold_out' });
    expect((await service.buy({ saleId: sale.id, userId: 'ann', quantity: 1 })).ok).toBe(true);
    expect(await service.waitlist.join(sale.id, 'ann')).toEqual({ ok: false, code: 'limit_reached' });
    expect(await service.waitlist.join(sale.id, 'bob')).toEqual({
      state: 'waiting',
      position: 1,
      waiting: 1,
    });
    expect(await service.waitlist.join(sale.id, 'cat')).toEqual({
      state: 'waiting',
      position: 2,
      waiting: 2,
    });
    // Asking again keeps the place (idempotent per buyer), in Redis and in the record.
    expect(await service.waitlist.join(sale.id, 'bob')).toEqual({
      state: 'waiting',
      position: 1,
      waiting: 2,
    });
    const { rows } = await env.db.query<{ user_id: string }>(
      'SELECT user_id FROM sale_waitlist WHERE sale_id = $1 AND left_at IS NULL ORDER BY seq',
      [sale.id],
    );
    expect(rows.map((r) => r.user_id)).toEqual(['bob', 'cat']);
    expect(await service.waitlist.join(sale.id, 'early')).toEqual({
      state: 'waiting',
      position: 3,
      waiting: 3,
    });
  });

  it('offers a cancelled unit to the head of the line, not to the open market; the head buys it', async () => {
    const { sale, orders } = await soldOutSale(1);
    await service.waitlist.join(sale.id, 'bob');
    await service.waitlist.join(sale.id, 'cat');
    const cancelled = await service.act(orders[0] as string, 'holder0', 'cancel');
    expect(cancelled.ok).toBe(true);

    // The unit is held for bob: the open market stays sold out, cat moves up.
    expect((await service.buy({ saleId: sale.id, userId: 'fast', quantity: 1 })).ok).toBe(false);
    expect(await env.redis.get(env.context.keys.sale(sale.id).stock)).toBe('0');
    const offered = await service.waitlist.standing(sale.id, 'bob');
    expect(offered.state).toBe('offered');
    expect(await service.waitlist.standing(sale.id, 'cat')).toEqual({
      state: 'waiting',
      position: 1,
      waiting: 1,
    });
    expect(await service.waitlist.buy(sale.id, 'cat')).toEqual({ ok: false, code: 'no_offer' });
    // Reconciliation counts the unit on offer: neither on sale nor lost, no drift.
    await until('the cancellation recorded', async () => (await recordedOrders(sale.id)).length === 0);
    const [drift] = await reconcile({ context: env.context, db: env.db, service }, { saleIds: [sale.id] });
    expect(drift).toMatchObject({ redisRemaining: 0, heldOffers: 1, recordedUnits: 0, drift: 0 });

    const bought = await service.waitlist.buy(sale.id, 'bob', { idempotencyKey: 'k1' });
    expect(bought).toMatchObject({ ok: true, duplicate: false });
    expect(await service.waitlist.buy(sale.id, 'bob', { idempotencyKey: 'k1' })).toMatchObject({
      ok: true,
      duplicate: true,
      orderId: (bought as { orderId: string }).orderId,
    });
    // The record: the cancelled order gave its unit to bob's, and nobody else holds one.
    await until(
      'bob’s order and the cancellation recorded',
      async () => (await recordedOrders(sale.id)).map((o) => o.user_id).join() === 'bob',
    );
    expect(await service.waitlist.standing(sale.id, 'bob')).toEqual({ state: 'none' });
  });

  it('an offer that lapses passes to the next in line; a declined one too; with nobody left the unit goes on sale', async () => {
    const { sale, orders } = await soldOutSale(1);
    let counted = 0; // what the lapsed-offers metric is fed
    const sweeper = new ExpirySweeper(env.context, {
      offerMs: OFFER_MS,
      onOffersLapsed: (n) => (counted += n),
    });
    for (const user of ['bob', 'cat', 'dan']) await service.waitlist.join(sale.id, user);
    expect((await service.act(orders[0] as string, 'holder0', 'cancel')).ok).toBe(true);
    expect((await service.waitlist.standing(sale.id, 'bob')).state).toBe('offered');

    // Bob never buys: once his window is over (Redis's clock), the sweeper passes it on.
    let lapsed = 0;
    await until(
      'bob’s offer to lapse',
      async () => {
        lapsed += (await sweeper.sweep()).lapsed;
        return lapsed > 0;
      },
      15_000,
    );
    expect(lapsed).toBe(1);
    expect(counted).toBe(1);
    expect(await service.waitlist.buy(sale.id, 'bob')).toEqual({ ok: false, code: 'no_offer' });
    expect((await service.waitlist.standing(sale.id, 'cat')).state).toBe('offered');
    expect(await service.waitlist.standing(sale.id, 'dan')).toEqual({
      state: 'waiting',
      position: 1,
      waiting: 1,
    });

    // Cat declines: dan is offered at once; dan declines: nobody waits, the unit is on sale again.
    expect(await service.waitlist.leave(sale.id, 'cat')).toBe('declined');
    expect((await service.waitlist.standing(sale.id, 'dan')).state).toBe('offered');
    expect(await service.waitlist.leave(sale.id, 'dan')).toBe('declined');
    expect(await env.redis.get(env.context.keys.sale(sale.id).stock)).toBe('1');
    expect((await service.buy({ saleId: sale.id, userId: 'fast', quantity: 1 })).ok).toBe(true);
  });

  it('a unit an expired order gives back goes to the line too (the sweeper’s step)', async () => {
    const sale = await service.createSale({ name: 'waitlist, expiry', stock: 1, payWithinSeconds: 1 });
    const sweeper = new ExpirySweeper(env.context, { offerMs: OFFER_MS });
    expect((await service.buy({ saleId: sale.id, userId: 'holder', quantity: 1 })).ok).toBe(true);
    await until('the order recorded', async () => (await recordedOrders(sale.id)).length === 1);
    await service.waitlist.join(sale.id, 'bob');
    await until(
      'the order to expire',
      async () =>
        (await sweeper.sweep()).expired > 0 ||
        (await env.redis.zcard(env.context.keys.sale(sale.id).offers)) > 0,
      15_000,
    );
    expect((await service.waitlist.standing(sale.id, 'bob')).state).toBe('offered');
    expect(await env.redis.get(env.context.keys.sale(sale.id).stock)).toBe('0');
  });
});

describe('a waitlist and reconciliation', () => {
  it('a unit the repair puts back is offered to the line’s head, not put on the open market', async () => {
    const { sale, orders } = await soldOutSale(2);
    expect((await service.act(orders[0] as string, 'holder0', 'cancel')).ok).toBe(true);
    await until('the cancellation recorded', async () => (await recordedOrders(sale.id)).length === 1);
    // Redis loses the unit the cancellation gave back (a write lost), and a buyer joins the line.
    await env.redis.set(env.context.keys.sale(sale.id).stock, 0);
    expect(await service.waitlist.join(sale.id, 'bob')).toMatchObject({ state: 'waiting', position: 1 });

    const deps = { context: env.context, db: env.db, service };
    const [repaired] = await reconcile(deps, { saleIds: [sale.id], repair: true });
    expect(repaired).toMatchObject({ drift: 1, repairedRemaining: 0 });
    expect((await service.waitlist.standing(sale.id, 'bob')).state).toBe('offered');
    expect((await service.buy({ saleId: sale.id, userId: 'fast', quantity: 1 })).ok).toBe(false);
    const [after] = await reconcile(deps, { saleIds: [sale.id] });
    expect(after).toMatchObject({ redisRemaining: 0, heldOffers: 1, drift: 0 });
  });
});

describe('a waitlist when Redis loses the sale', () => {
  it('the rebuild puts the recorded line back and offers the units to its head, never to the open market', async () => {
    const { sale, orders } = await soldOutSale(2);
    for (const user of ['bob', 'cat', 'dan']) await service.waitlist.join(sale.id, user);
    expect(await service.waitlist.leave(sale.id, 'cat')).toBe('left');
    expect((await service.act(orders[0] as string, 'holder0', 'cancel')).ok).toBe(true);
    expect((await service.waitlist.standing(sale.id, 'bob')).state).toBe('offered');
    await until('the cancellation recorded', async () => (await recordedOrders(sale.id)).length === 1);

    // Redis loses the sale (its stock, line and offers); the record has the joins.
    const keys = env.context.keys.sale(sale.id);
    await env.redis.del(keys.stock, keys.waitlist, keys.offers, keys.buyers, keys.open, keys.stream);
    const monitor = new RecoveryMonitor({
      context: env.context,
      db: env.db,
      admission: admissionRestore(env.context, env.db),
      offerMs: OFFER_MS,
      checkEveryMs: 0,
    });
    const recorded = await records.getSale(env.db, sale.id);
    const report = await monitor.rebuildNow(recorded!);
    expect(report).toMatchObject({ remaining: 0 });
    // Bob (first in line, his offer lost with Redis) is offered the unit again; dan still waits;
    // cat, who left, is not back; the open market stays sold out.
    expect((await service.waitlist.standing(sale.id, 'bob')).state).toBe('offered');
    expect(await service.waitlist.standing(sale.id, 'dan')).toEqual({
      state: 'waiting',
      position: 1,
      waiting: 1,
    });
    expect(await service.waitlist.standing(sale.id, 'cat')).toEqual({ state: 'none' });
    expect((await service.buy({ saleId: sale.id, userId: 'fast', quantity: 1 })).ok).toBe(false);
    expect((await service.waitlist.buy(sale.id, 'bob')).ok).toBe(true);
    await monitor.stop();
  });

  it('the start-up warm of a sale Redis lost does the same', async () => {
    const { sale, orders } = await soldOutSale(1);
    await service.waitlist.join(sale.id, 'bob');
    expect((await service.act(orders[0] as string, 'holder0', 'cancel')).ok).toBe(true);
    await until('the cancellation recorded', async () => (await recordedOrders(sale.id)).length === 0);
    const keys = env.context.keys.sale(sale.id);
    await env.redis.del(keys.stock, keys.waitlist, keys.offers, keys.buyers, keys.open);
    expect(await service.warmOpenSales()).toContain(sale.id);
    expect((await service.waitlist.standing(sale.id, 'bob')).state).toBe('offered');
    expect(await env.redis.get(keys.stock)).toBe('0');
    expect((await service.buy({ saleId: sale.id, userId: 'fast', quantity: 1 })).ok).toBe(false);
  });
});
