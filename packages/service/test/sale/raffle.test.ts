import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SnowflakeIdGenerator } from '../../src/sale/ids/snowflake.js';
import { ExpirySweeper } from '../../src/sale/lifecycle/sweeper.js';
import { entryHash, raffleKeys, raffleQueries } from '../../src/sale/raffle/keys.js';
import { merkleRoot } from '../../src/sale/raffle/merkle.js';
import { RaffleService } from '../../src/sale/raffle/raffles.js';
import { verifyRaffle } from '../../src/sale/raffle/verify.js';
import type { SaleView } from '../../src/sale/types.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();
/** Three raffle services, each on its own Redis connection and PostgreSQL pool (as three processes). */
const raffles: RaffleService[] = [];
const stops: Array<() => Promise<void>> = [];
beforeAll(async () => {
  for (let i = 0; i < 3; i++) {
    const instance = await env.instance();
    const ids = new SnowflakeIdGenerator(instance.context);
    await ids.start();
    stops.push(() => ids.stop());
    raffles.push(
      new RaffleService({ context: instance.context, db: instance.db, nextOrderId: () => ids.next() }),
    );
  }
  env.pipeline().start();
});
afterAll(async () => {
  for (const stop of stops) await stop();
});

const users = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`);
const pick = <T>(items: readonly T[], i: number) => items[i % items.length] as T;

interface EntryRow {
  user_id: string;
  position: number | null;
}

async function entryRows(saleId: string): Promise<EntryRow[]> {
  const { rows } = await env.db.query<EntryRow>(
    `SELECT e.user_id, p.place AS position FROM raffle_entries e
       LEFT JOIN raffle_places p ON p.sale_id = e.sale_id AND p.user_id = e.user_id
      WHERE e.sale_id = $1 ORDER BY p.place`,
    [saleId],
  );
  return rows;
}

/** Users holding an order of the sale (the record), with their place in the draw order. */
async function servedPlaces(saleId: string): Promise<number[]> {
  const { rows } = await env.db.query<{ position: number; n: number }>(
    `SELECT e.position, count(*)::int AS n FROM orders o
       JOIN (SELECT sale_id, user_id, place AS position FROM raffle_places) e
         ON e.sale_id = o.sale_id AND e.user_id = o.user_id
      WHERE o.sale_id = $1 GROUP BY e.position ORDER BY e.position`,
    [saleId],
  );
  for (const row of rows) expect(row.n, `orders of the entrant at place ${row.position}`).toBe(1);
  return rows.map((r) => r.position);
}

async function newRaffle(stock: number, extra: { payWithinSeconds?: number } = {}): Promise<SaleView> {
  return env.service.createSale({
    name: 'raffle',
    stock,
    admission: 'raffle',
    drawAt: new Date(Date.now() + 3_600_000),
    endsAt: new Date(Date.now() + 7_200_000),
    ...extra,
  });
}

async function enterAll(saleId: string, entrants: readonly string[]): Promise<void> {
  // Every entrant twice, from two "processes", all started before any is awaited.
  const results = await Promise.all(
    [...entrants, ...entrants].map((user, i) => pick(raffles, i).enter(saleId, user)),
  );
  expect(results.every((r) => r.ok)).toBe(true);
  expect(results.filter((r) => r.ok && !r.duplicate)).toHaveLength(entrants.length);
}

/** The published draw verifies against `user`'s receipt (a receipt any process signs alike). */
async function expectVerified(saleId: string, user: string): Promise<void> {
  const receipt = (await raffles[1]!.receipt(saleId, entryHash(saleId, user)))!;
  const verdict = verifyRaffle((await raffles[0]!.published(saleId))!, { receipt });
  expect(verdict.checks.filter((c) => !c.ok)).toEqual([]);
  expect(verdict.entry?.hash).toBe(entryHash(saleId, user));
}

/** Draws from three processes at once and serves from three at once; exactly one draw ran. */
async function drawAndServe(saleId: string, stock: number): Promise<void> {
  const draws = await Promise.all(raffles.map((r) => r.drawNow(saleId)));
  expect(draws.filter((d) => d.result === 'drawn')).toHaveLength(1);
  await Promise.all(raffles.map((r) => r.serve(saleId)));
  await until('the winners recorded', async () => (await servedPlaces(saleId)).length >= stock);
}

describe('raffle sales', () => {
  it('takes one entry per buyer, refuses purchases, draws once, serves the first `stock` in draw order', async () => {
    const sale = await newRaffle(5);
    expect(sale.admission).toBe('raffle');
    const entrants = users(40, 'r1-');
    await enterAll(sale.id, entrants);
    expect(await env.service.buy({ saleId: sale.id, userId: 'buyer', quantity: 1 })).toEqual({
      ok: false,
      code: 'not_started',
    });
    await drawAndServe(sale.id, 5);

    const rows = await entryRows(sale.id);
    expect(rows.map((r) => r.position)).toEqual(entrants.map((_, i) => i + 1));
    expect(await servedPlaces(sale.id)).toEqual([1, 2, 3, 4, 5]);
    // Serving again gives nothing: no unit left.
    expect((await raffles[0]!.serve(sale.id)).given).toBe(0);
    const { rows: sold } = await env.db.query<{ sold: number }>('SELECT sold FROM sales WHERE id = $1', [
      sale.id,
    ]);
    expect(sold[0]?.sold).toBe(5);

    const published = await raffles[1]!.published(sale.id);
    const first = entryHash(sale.id, rows[0]!.user_id);
    const receipt = (await raffles[2]!.receipt(sale.id, first))!;
    const verdict = verifyRaffle(published!, { receipt });
    expect(verdict.checks.filter((c) => !c.ok)).toEqual([]);
    expect(verdict.entry).toEqual({ hash: first, position: 1, won: true });
    // The verifier catches a draw that is not the seed's: two places swapped, or a loser marked won.
    const swapped = published!.entries.map((e) =>
      e.position === 1 ? { ...e, position: 2 } : e.position === 2 ? { ...e, position: 1 } : e,
    );
    expect(verifyRaffle({ ...published!, entries: swapped }, { receipt }).ok).toBe(false);
    const favoured = published!.entries.map((e) => (e.position === 9 ? { ...e, won: true } : e));
    expect(verifyRaffle({ ...published!, entries: favoured }, { receipt }).ok).toBe(false);
    expect(verifyRaffle({ ...published!, seed: 'ab'.repeat(32) }, { receipt }).ok).toBe(false);
    // A receipt whose commitment was edited is not the service's; a key other than the one pinned fails.
    const edited = {
      ...receipt,
      payload: {
        ...receipt.payload,
        commitment: { ...receipt.payload.commitment, seedHash: 'ab'.repeat(32) },
      },
    };
    expect(verifyRaffle(published!, { receipt: edited }).checks[0]?.line).toMatch(/receipt is NOT signed/);
    const otherKey = Buffer.alloc(32, 7).toString('base64url');
    expect(verifyRaffle(published!, { receipt, publicKey: otherKey }).ok).toBe(false);
    // Nothing held apart from the document (no receipt, no seed hash): nothing is verified.
    const unheld = verifyRaffle(published!);
    expect(unheld.ok).toBe(false);
    expect(unheld.checks.filter((c) => !c.ok).map((c) => c.line)).toEqual([
      expect.stringContaining('no commitment held apart from the document'),
      expect.stringContaining('signed by a key nobody pinned'),
      expect.stringContaining("close statement's commitment"),
      expect.stringContaining('does NOT match the commitment (none held)'),
    ]);
  });

  it('gives units that come back (cancelled, expired) to the next entrants in draw order', async () => {
    const sale = await newRaffle(4, { payWithinSeconds: 3_600 });
    await enterAll(sale.id, users(12, 'r2-'));
    await drawAndServe(sale.id, 4);
    const rows = await entryRows(sale.id);
    const orderOf = async (place: number) => (await raffles[0]!.entryOf(sale.id, rows[place - 1]!.user_id))!;
    // Place 1 pays, place 2 cancels, places 3 and 4 let their orders expire.
    const first = await orderOf(1);
    const second = await orderOf(2);
    expect(first.status).toBe('won');
    expect((await env.service.act(first.orderId!, rows[0]!.user_id, 'pay')).ok).toBe(true);
    expect((await env.service.act(second.orderId!, rows[1]!.user_id, 'cancel')).ok).toBe(true);
    // Places 3 and 4 let their orders lapse: their deadlines come due now (the sorted set the
    // pipeline fills, scored on Redis's clock), and the sweeper expires them.
    const deadlines = raffleKeys(sale.id).sale.deadlines;
    await until('the unpaid orders scheduled', async () => (await env.redis.zcard(deadlines)) === 2);
    for (const member of await env.redis.zrange(deadlines, 0, -1))
      await env.redis.zadd(deadlines, 'XX', 0, member);
    const sweeper = new ExpirySweeper(env.context, { maxIdleMs: 50 });
    sweeper.start();
    try {
      // Serving races the expiries and each other; the waitlist gets every unit back, in order.
      await until(
        'the waitlist served',
        async () => {
          await Promise.all(raffles.map((r) => r.serve(sale.id)));
          const { rows: held } = await env.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM orders WHERE sale_id = $1 AND status IN ('confirmed', 'paid')`,
            [sale.id],
          );
          return (held[0]?.n ?? 0) === 4 && (await servedPlaces(sale.id)).length >= 7;
        },
        30_000,
      );
    } finally {
      await sweeper.stop();
    }
    const served = await servedPlaces(sale.id);
    expect(served).toEqual(Array.from({ length: served.length }, (_, i) => i + 1));
    const view = await raffles[2]!.view(sale.id);
    expect(view).toMatchObject({ phase: 'drawn', entries: 12, paid: 1, winners: served.length });
    expect(view!.waitlist).toBe(12 - served.length);
    expect((await raffles[2]!.entryOf(sale.id, rows[11]!.user_id))?.status).toBe('waitlisted');
    await expectVerified(sale.id, rows[11]!.user_id);
  });

  it('draws from the record when Redis lost entries, and serves nobody twice when Redis lost the cursor', async () => {
    const sale = await newRaffle(3);
    const early = users(10, 'r3a-');
    await enterAll(sale.id, early);
    await raffles[0]!.recordEntries(sale.id);
    const keys = raffleKeys(sale.id);
    // Redis loses the raffle's window, entrants and stream: entries go on (the window is loaded
    // again from the record); those recorded before stay in the draw.
    await env.redis.del(keys.window, keys.entrants, keys.entries);
    const late = users(5, 'r3b-');
    await enterAll(sale.id, [...late, early[0]!]);
    await drawAndServe(sale.id, 3);
    expect((await entryRows(sale.id)).map((r) => r.user_id).sort()).toEqual([...early, ...late].sort());
    // A cursor Redis lost comes back from the record: no entrant is served again.
    await env.redis.del(keys.cursor);
    const first = (await entryRows(sale.id))[0]!.user_id;
    const order = (await raffles[0]!.entryOf(sale.id, first))!.orderId!;
    expect((await env.service.act(order, first, 'cancel')).ok).toBe(true); // a unit back
    await until('the fourth place recorded', async () => {
      await Promise.all(raffles.map((r) => r.serve(sale.id)));
      return (await servedPlaces(sale.id)).length === 4;
    });
    expect(await servedPlaces(sale.id)).toEqual([1, 2, 3, 4]);
    await expectVerified(sale.id, late[0]!);
  });

  it('signs at the close the Merkle root verify recomputes, over leaves PostgreSQL hashed (700 entries: 3 leaves)', async () => {
    const sale = await newRaffle(1);
    await env.db.query(raffleQueries.benchEntries, [sale.id, 700]);
    expect((await raffles[0]!.drawNow(sale.id)).entries).toBe(700);
    const published = (await raffles[1]!.published(sale.id))!;
    expect(published.close?.payload).toMatchObject({
      entries: 700,
      root: merkleRoot(published.entries.map((e) => e.hash)),
    });
    const held = { seedHash: published.seedHash, publicKey: published.key!.publicKey };
    const lines = verifyRaffle(published, held).checks;
    expect(lines.find((c) => c.line.includes('signed at the close'))).toMatchObject({ ok: true });
    // One entry of the 700 changed (the last leaf's or the first's): not the list signed at the close.
    for (const at of [0, 699]) {
      const entries = published.entries.map((e, i) => (i === at ? { ...e, hash: 'f'.repeat(63) + '0' } : e));
      const changed = verifyRaffle({ ...published, entries }, held).checks;
      expect(changed.find((c) => c.line.includes('signed at the close'))).toMatchObject({ ok: false });
    }
  });

  it('refuses a split raffle, and draw settings on a first-come sale', async () => {
    await expect(
      env.service.createSale({ name: 'x', stock: 10, admission: 'raffle', shards: 2 }),
    ).rejects.toThrow(/cannot be split/);
    await expect(
      env.service.createSale({ name: 'x', stock: 10, drawAt: new Date(Date.now() + 1000) }),
    ).rejects.toThrow(/drawAt is for admission 'raffle'/);
    await expect(
      env.service.createSale({ name: 'x', stock: 10, admission: 'raffle', perUserLimit: 2 }),
    ).rejects.toThrow(/perUserLimit must be 1/);
  });
});
