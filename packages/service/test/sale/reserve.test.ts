import { describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { redisState } from '../helpers/redis-state.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();

async function counts(saleId: string) {
  const { rows } = await env.db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM orders WHERE sale_id = $1 GROUP BY status',
    [saleId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe('reservation and order pipeline', () => {
  it('reserves up to the stock, one per user, and records exactly those orders', async () => {
    const sale = await env.service.createSale({ name: 'five', stock: 5 });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => env.service.buy({ saleId: sale.id, userId: `u${i}`, quantity: 1 })),
    );
    const reserved = results.filter((r) => r.ok);
    expect(reserved).toHaveLength(5);
    expect(results.filter((r) => !r.ok && r.code === 'sold_out')).toHaveLength(3);
    // Once sold out, every attempt (a repeat buyer's too) is answered sold_out before anything else.
    expect(await env.service.buy({ saleId: sale.id, userId: 'u0', quantity: 1 })).toEqual({
      ok: false,
      code: 'sold_out',
    });
    await env.pipeline().drain();
    expect(await counts(sale.id)).toEqual({ confirmed: 5 });
    const keys = saleKeys(sale.id);
    expect(await env.redis.get(keys.stock)).toBe('0');
    const view = await env.service.getSale(sale.id);
    expect(view).toMatchObject({ stock: 5, remaining: 0, sold: 5, status: 'sold_out' });
    for (const r of reserved) {
      if (!r.ok) continue;
      expect(await env.service.getOrder(r.orderId)).toMatchObject({ status: 'confirmed', quantity: 1 });
    }
  });

  it('refuses a second purchase over the per-user limit', async () => {
    const sale = await env.service.createSale({ name: 'limit', stock: 10, perUserLimit: 2 });
    expect((await env.service.buy({ saleId: sale.id, userId: 'x', quantity: 2 })).ok).toBe(true);
    expect(await env.service.buy({ saleId: sale.id, userId: 'x', quantity: 1 })).toEqual({
      ok: false,
      code: 'limit_reached',
    });
    expect(await env.redis.get(saleKeys(sale.id).stock)).toBe('8'); // the refusal changed nothing
    expect(await env.redis.hget(saleKeys(sale.id).buyers, 'x')).toBe('2');
  });

  it('answers the original order for a repeated Idempotency-Key, per user', async () => {
    const sale = await env.service.createSale({ name: 'idem', stock: 10, perUserLimit: 3 });
    const first = await env.service.buy({
      saleId: sale.id,
      userId: 'alice',
      quantity: 1,
      idempotencyKey: 'k1',
    });
    const again = await env.service.buy({
      saleId: sale.id,
      userId: 'alice',
      quantity: 1,
      idempotencyKey: 'k1',
    });
    const other = await env.service.buy({
      saleId: sale.id,
      userId: 'bob',
      quantity: 1,
      idempotencyKey: 'k1',
    });
    const changed = await env.service.buy({
      saleId: sale.id,
      userId: 'alice',
      quantity: 2,
      idempotencyKey: 'k1',
    });
    expect(first.ok && again.ok && other.ok).toBe(true);
    if (!first.ok || !again.ok || !other.ok) return;
    expect(again).toEqual({ ok: true, orderId: first.orderId, duplicate: true });
    expect(other.orderId).not.toBe(first.orderId);
    expect(changed).toEqual({ ok: false, code: 'idempotency_key_reused' });
    expect(await env.redis.get(saleKeys(sale.id).stock)).toBe('8');
    expect(await env.service.getOrder(first.orderId)).toMatchObject({ status: 'reserved', userId: 'alice' });
  });

  it('a refused purchase changes nothing in Redis: every key and value is as before', async () => {
    const sale = await env.service.createSale({ name: 'refusals', stock: 5, perUserLimit: 2 });
    const soldOut = await env.service.createSale({ name: 'gone', stock: 1 });
    const later = await env.service.createSale({
      name: 'not yet',
      stock: 5,
      startsAt: new Date(Date.now() + 3_600_000),
    });
    const past = await env.service.createSale({
      name: 'over',
      stock: 5,
      startsAt: new Date(Date.now() - 120_000),
      endsAt: new Date(Date.now() - 60_000),
    });
    const buy = (saleId: string, userId: string, quantity = 1, idempotencyKey?: string) =>
      env.service.buy({ saleId, userId, quantity, ...(idempotencyKey ? { idempotencyKey } : {}) });
    expect((await buy(sale.id, 'held', 2, 'k')).ok).toBe(true);
    expect((await buy(soldOut.id, 'first')).ok).toBe(true);
    const before = await redisState(env.redis);
    const refusals = [
      [await buy(sale.id, 'held'), 'limit_reached'], // a returning buyer over the limit
      [await buy(sale.id, 'new', 3), 'limit_reached'], // a new buyer asking for more than the limit
      [await buy(sale.id, 'new', 2, 'k2'), 'ok'], // (leaves one unit)
      [await buy(sale.id, 'other', 2), 'sold_out'], // fewer units left than asked for
      [await buy(sale.id, 'held', 1, 'k'), 'idempotency_key_reused'],
      [await buy(sale.id, 'held', 2, 'k'), 'duplicate'],
      [await buy(soldOut.id, 'second'), 'sold_out'],
      [await buy(soldOut.id, 'second', 1, 'fresh-key'), 'sold_out'],
      [await buy(later.id, 'early'), 'not_started'],
      [await buy(past.id, 'late'), 'ended'],
      [await buy('424242', 'lost'), 'not_found'],
    ] as const;
    expect(
      refusals.map(([result]) => (result.ok ? (result.duplicate ? 'duplicate' : 'ok') : result.code)),
    ).toEqual(refusals.map(([, expected]) => expected));
    const after = await redisState(env.redis);
    // The one purchase in the list changed its own keys; everything else is untouched.
    const keys = saleKeys(sale.id);
    const changedByPurchase = [keys.stock, keys.buyers, keys.stream, keys.idempotency('new', 'k2')];
    const without = (state: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(state).filter(([key]) => !changedByPurchase.includes(key)));
    expect(without(after)).toEqual(without(before));
    expect(await env.redis.get(keys.stock)).toBe('1');
    expect(await env.redis.hgetall(keys.buyers)).toEqual({ held: '2', new: '2' });
    expect(await env.redis.xlen(keys.stream)).toBe(2);
  });

  it('refuses outside the time window (Redis server clock) and for unknown sales', async () => {
    const soon = new Date(Date.now() + 60_000);
    const later = await env.service.createSale({ name: 'later', stock: 1, startsAt: soon });
    expect(await env.service.buy({ saleId: later.id, userId: 'u', quantity: 1 })).toEqual({
      ok: false,
      code: 'not_started',
    });
    const past = await env.service.createSale({
      name: 'past',
      stock: 1,
      startsAt: new Date(Date.now() - 120_000),
      endsAt: new Date(Date.now() - 60_000),
    });
    expect(await env.service.buy({ saleId: past.id, userId: 'u', quantity: 1 })).toEqual({
      ok: false,
      code: 'ended',
    });
    expect(await env.service.buy({ saleId: '999999', userId: 'u', quantity: 1 })).toEqual({
      ok: false,
      code: 'not_found',
    });
  });

  it('keeps the record within stock when Redis loses its writes, rejecting the excess visibly', async () => {
    const sale = await env.service.createSale({ name: 'fence', stock: 3 });
    for (let i = 0; i < 3; i++) await env.service.buy({ saleId: sale.id, userId: `a${i}`, quantity: 1 });
    // Redis "forgets" (a restart without persistence): stock and buyers come back as at creation.
    const keys = saleKeys(sale.id);
    await env.redis.set(keys.stock, 3);
    await env.redis.del(keys.buyers);
    for (let i = 0; i < 3; i++) await env.service.buy({ saleId: sale.id, userId: `b${i}`, quantity: 1 });
    await env.service.buy({ saleId: sale.id, userId: 'a0', quantity: 1 }); // over the limit in the record
    const rejectedBefore = (await env.metrics.ordersRejected.get()).values.reduce((s, v) => s + v.value, 0);
    await env.pipeline().drain();
    expect(await counts(sale.id)).toEqual({ confirmed: 3, rejected: 3 });
    const { rows } = await env.db.query<{ sold: number }>('SELECT sold FROM sales WHERE id = $1', [sale.id]);
    expect(rows[0]?.sold).toBe(3);
    const rejectedAfter = (await env.metrics.ordersRejected.get()).values.reduce((s, v) => s + v.value, 0);
    expect(rejectedAfter - rejectedBefore).toBe(3);
  });

  it('dead-letters a malformed entry and keeps going', async () => {
    const sale = await env.service.createSale({ name: 'poison', stock: 5 });
    const keys = saleKeys(sale.id);
    await env.redis.xadd(keys.stream, '*', 'garbage', 'yes');
    expect((await env.service.buy({ saleId: sale.id, userId: 'fine', quantity: 1 })).ok).toBe(true);
    await env.pipeline().drain();
    expect(await counts(sale.id)).toEqual({ confirmed: 1 });
    const dead = await env.redis.xrange(keys.dead, '-', '+');
    expect(dead).toHaveLength(1);
    expect(dead[0]?.[1]).toContain('malformed');
    expect(((await env.redis.xpending(keys.stream, 'order-writers')) as unknown[])[0]).toBe(0);
  });

  it('a redelivered entry is acknowledged without a second effect', async () => {
    const sale = await env.service.createSale({ name: 'redeliver', stock: 5 });
    for (let i = 0; i < 3; i++) await env.service.buy({ saleId: sale.id, userId: `r${i}`, quantity: 1 });
    let crash = true;
    const pipeline = env.pipeline({
      consumer: 'crashy',
      faults: {
        afterCommit: async () => {
          if (crash) throw Object.assign(new Error('crash between commit and XACK'), { code: 'ECONNRESET' });
        },
      },
    });
    await expect(pipeline.step(0)).rejects.toThrow('crash between commit and XACK');
    expect(await counts(sale.id)).toEqual({ confirmed: 3 }); // committed, not acknowledged
    crash = false;
    await pipeline.drain(); // re-reads its own pending entries
    expect(await counts(sale.id)).toEqual({ confirmed: 3 });
    expect(((await env.redis.xpending(saleKeys(sale.id).stream, 'order-writers')) as unknown[])[0]).toBe(0);
  });
});
