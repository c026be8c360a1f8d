import { describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { reconcile } from '../../src/sale/reconcile.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();

describe('reconciliation', () => {
  it('finds Redis in sync with the record, then repairs stock and buyers after Redis lost writes', async () => {
    const sale = await env.service.createSale({ name: 'reconcile', stock: 10 });
    for (let i = 0; i < 3; i++) await env.service.buy({ saleId: sale.id, userId: `u${i}`, quantity: 1 });
    await env.pipeline().drain(); // 3 recorded
    for (let i = 3; i < 5; i++) await env.service.buy({ saleId: sale.id, userId: `u${i}`, quantity: 1 }); // in flight
    const deps = { context: env.context, db: env.db, service: env.service };
    const [clean] = await reconcile(deps, { saleIds: [sale.id] });
    expect(clean).toMatchObject({
      stock: 10,
      redisRemaining: 5,
      recordedUnits: 3,
      inFlightUnits: 2,
      drift: 0,
      buyersBelowRecord: 0,
      unscheduledOrders: 0,
    });

    // Redis lost this sale's counters (as after a restart without persistence): it offers all 10 again.
    const keys = saleKeys(sale.id);
    await env.redis.set(keys.stock, 10);
    await env.redis.del(keys.buyers);
    const [drifted] = await reconcile(deps, { saleIds: [sale.id] });
    // All five buyers are below: three by the record, two by reservations it has not applied yet.
    expect(drifted).toMatchObject({ redisRemaining: 10, drift: -5, buyersBelowRecord: 5 });

    const [repaired] = await reconcile(deps, { saleIds: [sale.id], repair: true });
    expect(repaired?.repairedRemaining).toBe(5);
    expect(await env.redis.get(keys.stock)).toBe('5');
    expect(await env.service.buy({ saleId: sale.id, userId: 'u0', quantity: 1 })).toEqual({
      ok: false,
      code: 'limit_reached',
    });
    const [after] = await reconcile(deps, { saleIds: [sale.id] });
    expect(after?.drift).toBe(0);
  });

  it('puts a sale Redis lost entirely back, with what the record leaves', async () => {
    const sale = await env.service.createSale({ name: 'wiped', stock: 4 });
    for (let i = 0; i < 2; i++) await env.service.buy({ saleId: sale.id, userId: `w${i}`, quantity: 1 });
    await env.pipeline().drain();
    const keys = saleKeys(sale.id);
    await env.redis.del(keys.stock, keys.notBefore, keys.open, keys.buyers);
    expect(await env.service.buy({ saleId: sale.id, userId: 'x', quantity: 1 })).toEqual({
      ok: false,
      code: 'not_found',
    });
    const deps = { context: env.context, db: env.db, service: env.service };
    const [repaired] = await reconcile(deps, { saleIds: [sale.id], repair: true });
    expect(repaired?.repairedRemaining).toBe(2);
    const next = await env.service.buy({ saleId: sale.id, userId: 'x', quantity: 1 });
    expect(next.ok).toBe(true);
  });
});
