import { describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { reconcile } from '../../src/sale/reconcile.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();

/** How many reservation scripts Redis has run so far (every EVALSHA of any client). */
async function scriptCalls(): Promise<number> {
  const stats = await env.redis.info('commandstats');
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

const buy = (saleId: string, userId: string) => env.service.buy({ saleId, userId, quantity: 1 });

/**
 * For a sale with no unit left: attempts until this process answers from memory (the first sold-out
 * reply subscribes to the restock channel, a reply after Redis confirmed it is remembered).
 */
async function soldOutFromMemory(saleId: string): Promise<void> {
  let n = 0;
  await until('sold-out answers from memory', async () => {
    const calls = await scriptCalls();
    expect(await buy(saleId, `refused${n++}`)).toEqual({ ok: false, code: 'sold_out' });
    return (await scriptCalls()) === calls;
  });
}

describe('the sold-out fast path', () => {
  it('answers a sold-out sale from memory until a restock message says units came back', async () => {
    const sale = await env.service.createSale({ name: 'fast path', stock: 3 });
    for (const user of ['a', 'b']) expect((await buy(sale.id, user)).ok).toBe(true);
    await env.pipeline().drain();
    // Redis lost a unit (it offers none, the record says one is left): repair will give it back.
    await env.redis.set(saleKeys(sale.id).stock, 0);
    await soldOutFromMemory(sale.id);

    const calls = await scriptCalls();
    const flood = await Promise.all(Array.from({ length: 200 }, (_, i) => buy(sale.id, `flood${i}`)));
    expect(flood.every((r) => !r.ok && r.code === 'sold_out')).toBe(true);
    expect(await scriptCalls()).toBe(calls); // not one of them reached Redis

    const deps = { redis: env.redis, db: env.db, service: env.service };
    const [repaired] = await reconcile(deps, { saleIds: [sale.id], repair: true });
    expect(repaired?.repairedRemaining).toBe(1);
    // The repair published on the sale's restock channel; once it arrives the unit is sold again.
    let refusedMeanwhile = 0;
    await until('the returned unit to be sold', async () => {
      const result = await buy(sale.id, `after${refusedMeanwhile}`);
      if (!result.ok) refusedMeanwhile++;
      return result.ok;
    });
    expect(await env.redis.get(saleKeys(sale.id).stock)).toBe('0');
  });

  it('forgets everything when its subscriber connection is lost (messages may have been missed)', async () => {
    const sale = await env.service.createSale({ name: 'lost messages', stock: 1 });
    expect((await buy(sale.id, 'only')).ok).toBe(true);
    await soldOutFromMemory(sale.id);
    const calls = await scriptCalls();
    expect(await buy(sale.id, 'remembered')).toEqual({ ok: false, code: 'sold_out' });
    expect(await scriptCalls()).toBe(calls);

    await env.redis.client('KILL', 'TYPE', 'pubsub');
    // A unit comes back while the subscriber is down, so its message (if any) is lost.
    await env.redis.incr(saleKeys(sale.id).stock);
    await until('the unit to be sold', async () => (await buy(sale.id, `retry${Date.now()}`)).ok);
  });

  it('does not answer from memory for requests with an Idempotency-Key (a retry gets its order)', async () => {
    const sale = await env.service.createSale({ name: 'idempotent retry', stock: 1 });
    const first = await env.service.buy({ saleId: sale.id, userId: 'u', quantity: 1, idempotencyKey: 'k' });
    expect(first.ok).toBe(true);
    await soldOutFromMemory(sale.id);
    const again = await env.service.buy({ saleId: sale.id, userId: 'u', quantity: 1, idempotencyKey: 'k' });
    expect(again).toEqual({ ...first, duplicate: true });
  });
});
