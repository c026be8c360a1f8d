import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SnowflakeIdGenerator } from '../../src/sale/ids/snowflake.js';
import { RaffleService } from '../../src/sale/raffle/raffles.js';
import { drawOrder } from '../../src/sale/raffle/verify.js';
import { useSaleStack } from '../helpers/sale.js';

// The draw's order pinned: a change to how the draw computes or stores its places (draw-order.sql,
// the blocks the places are kept in) must give the same order for the same seed and entries.

const env = useSaleStack();
let raffles: RaffleService;
let ids: SnowflakeIdGenerator;
beforeAll(async () => {
  const instance = await env.instance();
  ids = new SnowflakeIdGenerator(instance.context);
  await ids.start();
  raffles = new RaffleService({ context: instance.context, db: instance.db, nextOrderId: () => ids.next() });
});
afterAll(() => ids.stop());

const SEED = createHash('sha256').update('lockstock pinned draw').digest();
const hashOf = (i: number) => createHash('sha256').update(`pinned entry ${i}`).digest('hex');

/** A raffle with the pinned seed and `n` recorded entries p0 … p(n-1) with fixed hashes. */
async function pinnedRaffle(n: number): Promise<string> {
  const sale = await env.service.createSale({
    name: 'pinned raffle',
    stock: 3,
    admission: 'raffle',
    drawAt: new Date(Date.now() + 3_600_000),
    endsAt: new Date(Date.now() + 7_200_000),
  });
  await env.db.query('UPDATE raffles SET seed = $2, seed_hash = $3 WHERE sale_id = $1', [
    sale.id,
    SEED,
    createHash('sha256').update(SEED).digest('hex'),
  ]);
  await env.db.query(
    `INSERT INTO raffle_entries (sale_id, user_id, entry_hash, entered_at)
     SELECT $1, 'p' || i, encode(sha256(convert_to('pinned entry ' || i, 'UTF8')), 'hex'), now()
       FROM generate_series(0, $2::int - 1) AS i`,
    [sale.id, n],
  );
  expect((await raffles.drawNow(sale.id)).result).toBe('drawn');
  return sale.id;
}

/** The published list's hashes in place order, with their places. */
async function publishedOrder(saleId: string): Promise<Array<{ hash: string; position?: number }>> {
  const published = (await raffles.published(saleId))!;
  return published.entries.filter((e) => e.position !== undefined).sort((a, b) => a.position! - b.position!);
}

describe('the draw order', () => {
  it('is the pinned order of 12 entries under a fixed seed', async () => {
    const saleId = await pinnedRaffle(12);
    const pinned = [2, 6, 1, 11, 10, 9, 5, 3, 7, 4, 0, 8];
    const byHash = new Map(Array.from({ length: 12 }, (_, i) => [hashOf(i), i]));
    const order = await publishedOrder(saleId);
    expect(order.map((e) => e.position)).toEqual(pinned.map((_, i) => i + 1));
    expect(order.map((e) => byHash.get(e.hash))).toEqual(pinned);
    for (const [place, i] of pinned.entries()) {
      expect((await raffles.entryOf(saleId, `p${i}`))?.position, `p${i}`).toBe(place + 1);
    }
  });

  it('is the verifier’s order across thousands of entries, by place and by buyer', async () => {
    const n = 2_600;
    const saleId = await pinnedRaffle(n);
    const expected = drawOrder(
      SEED.toString('hex'),
      Array.from({ length: n }, (_, i) => hashOf(i)),
    );
    const order = await publishedOrder(saleId);
    expect(order.map((e) => e.position)).toEqual(expected.map((_, i) => i + 1));
    expect(order.map((e) => e.hash)).toEqual(expected);
    const userAt = new Map(Array.from({ length: n }, (_, i) => [hashOf(i), `p${i}`]));
    for (const place of [1, 1023, 1024, 1025, 2048, 2049, n]) {
      const user = userAt.get(expected[place - 1]!)!;
      expect((await raffles.entryOf(saleId, user))?.position, user).toBe(place);
    }
  });
});
