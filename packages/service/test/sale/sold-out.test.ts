import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { reconcile } from '../../src/sale/reconcile.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();

/**
 * Every script call Redis executes, as MONITOR reports it (its arguments), and the markers seen. Not
 * the server-wide EVALSHA count of INFO commandstats: work in the background moves that (the id
 * generator renews its lease with a script, on the service's own connection), and a script sent as
 * EVAL (after NOSCRIPT) would not move it.
 */
let monitor: Redis;
const scriptsRun: string[][] = [];
const markers = new Set<string>();
beforeAll(async () => {
  monitor = await env.redis.monitor();
  monitor.on('monitor', (_time: string, args: string[]) => {
    const command = args[0]?.toLowerCase();
    if (command === 'evalsha' || command === 'eval') scriptsRun.push(args);
    else if (command === 'echo' && args[1]?.startsWith('marker:')) markers.add(args[1]);
  });
});
afterAll(() => monitor.disconnect());

/**
 * How many reservation attempts on the sale have reached Redis so far: script calls whose first key is
 * the sale's not-before key (the reservation scripts' key list; no other script starts with it), one
 * per attempt (an EVALSHA refused with NOSCRIPT and sent again as EVAL has the same keys and arguments,
 * order id included). Everything the service sent before is counted: MONITOR reports commands in the
 * order Redis runs them, and a marker sent after them on the service's connection is waited for.
 */
let marks = 0;
async function reservationsRun(saleId: string): Promise<number> {
  const marker = `marker:${++marks}`;
  await env.redis.echo(marker);
  await until('MONITOR to report the marker', async () => markers.has(marker));
  const first = saleKeys(saleId).notBefore;
  const attempts = scriptsRun.filter((args) => args[3] === first).map((args) => args.slice(2).join(' '));
  return new Set(attempts).size;
}

const buy = (saleId: string, userId: string) => env.service.buy({ saleId, userId, quantity: 1 });

/**
 * For a sale with no unit left: attempts until this process answers from memory (the first sold-out
 * reply subscribes to the restock channel, a reply after Redis confirmed it is remembered).
 */
async function soldOutFromMemory(saleId: string): Promise<void> {
  let n = 0;
  await until('sold-out answers from memory', async () => {
    const calls = await reservationsRun(saleId);
    expect(await buy(saleId, `refused${n++}`)).toEqual({ ok: false, code: 'sold_out' });
    return (await reservationsRun(saleId)) === calls;
  });
}

describe('the sold-out fast path', () => {
  it('answers a sold-out sale from memory until a restock message says units came back', async () => {
    const sale = await env.service.createSale({ name: 'fast path', stock: 3 });
    for (const user of ['a', 'b']) expect((await buy(sale.id, user)).ok).toBe(true);
    expect(await reservationsRun(sale.id)).toBe(2); // the count sees those that do reach Redis
    await env.pipeline().drain();
    // Redis lost a unit (it offers none, the record says one is left): repair will give it back.
    await env.redis.set(saleKeys(sale.id).stock, 0);
    await soldOutFromMemory(sale.id);

    const calls = await reservationsRun(sale.id);
    const flood = await Promise.all(Array.from({ length: 200 }, (_, i) => buy(sale.id, `flood${i}`)));
    expect(flood.every((r) => !r.ok && r.code === 'sold_out')).toBe(true);
    expect(await reservationsRun(sale.id)).toBe(calls); // not one of them reached Redis

    const deps = { context: env.context, db: env.db, service: env.service };
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
    expect(await reservationsRun(sale.id)).toBe(1);
    await soldOutFromMemory(sale.id);
    const calls = await reservationsRun(sale.id);
    expect(await buy(sale.id, 'remembered')).toEqual({ ok: false, code: 'sold_out' });
    expect(await reservationsRun(sale.id)).toBe(calls);

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
