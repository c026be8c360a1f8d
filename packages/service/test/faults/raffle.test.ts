import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drawOrder } from '../../src/sale/raffle/verify.js';
import { apiClient } from '../helpers/api-client.js';
import { until } from '../helpers/until.js';
import { FaultCluster } from './harness/cluster.js';
import pg from 'pg';

/**
 * The raffle's fault row (also run by `npm run test:faults`): Redis SIGKILLed and restarted from its
 * AOF (fsync every second) while buyers enter, and again right after the draw, before its winners are
 * recorded; two `serve` processes and a `worker`. Judged from PostgreSQL's rows and the published
 * data: one entry and at most one order per buyer, places 1..N once each, the units given to the first
 * entrants in draw order and never more than the stock, the draw recomputed from the published data
 * equal to the recorded one, and no process crashed.
 */
const SECRET = 'raffle-faults-secret-0123456789ab';
const ENTRANTS = 80;
const STOCK = 20;

let cluster: FaultCluster;
let db: pg.Pool;
beforeAll(async () => {
  cluster = await FaultCluster.start({ secret: SECRET });
  db = new pg.Pool({ connectionString: cluster.postgres.url, max: 2 });
  db.on('error', () => undefined);
}, 180_000);
afterAll(async () => {
  await db?.end();
  await cluster?.stop();
});

const request = apiClient(SECRET);

async function call(server: string, method: string, path: string, user: string, body?: object) {
  try {
    return await request(method, `${server}${path}`, user, { body, timeoutMs: 15_000 });
  } catch {
    return { status: 0, body: {} }; // no answer (the process was busy or the connection dropped)
  }
}

/** Asks until the answer is not a 503 / no answer (a dependency was down: try again), at most `tries`. */
async function retrying(ask: () => ReturnType<typeof call>, tries = 120) {
  for (let i = 0; ; i++) {
    const answer = await ask();
    if ((answer.status !== 503 && answer.status !== 0) || i >= tries) return answer;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('a raffle sale under Redis faults', () => {
  it('Redis SIGKILLed and restarted during the entries and after the draw', async () => {
    const [a, b] = cluster.servers as [string, string];
    const created = await call(a, 'POST', '/api/sales', 'admin', {
      name: 'raffle under faults',
      stock: STOCK,
      admission: 'raffle',
      drawAt: new Date(Date.now() + 3_600_000).toISOString(),
      payWithinSeconds: 3_600,
    });
    expect(created.status).toBe(201);
    const saleId = String(created.body.id);
    const enter = (i: number) =>
      retrying(() => call(i % 2 ? a : b, 'POST', `/api/sales/${saleId}/raffle/entries`, `e${i}`));

    // Half the entrants, then Redis is killed while the other half enter, and comes back.
    const first = await Promise.all(Array.from({ length: ENTRANTS / 2 }, (_, i) => enter(i)));
    const second = Array.from({ length: ENTRANTS / 2 }, (_, i) => enter(ENTRANTS / 2 + i));
    await cluster.redis.kill();
    await cluster.redis.restart();
    const answers = [...first, ...(await Promise.all(second))];
    // Everyone enters once more (idempotent): an entry Redis lost with its last second is made again.
    const again = await Promise.all(Array.from({ length: ENTRANTS }, (_, i) => enter(i)));
    expect([...answers, ...again].map((r) => r.status).filter((s) => s !== 202)).toEqual([]);

    // The draw, asked of both serves; Redis is killed again right after, before the winners are served
    // or recorded, and restarted.
    const draws = await Promise.all(
      [a, b].map((s) => retrying(() => call(s, 'POST', `/api/sales/${saleId}/raffle/draw`, 'admin'))),
    );
    await cluster.redis.kill();
    await cluster.redis.restart();
    expect(draws.map((d) => d.status)).toEqual([200, 200]);
    expect(draws.filter((d) => d.body.result === 'drawn').length).toBeLessThanOrEqual(1); // or a runner drew

    // The serves' runners serve the winners once Redis is back (the sale rebuilt from the record).
    const winners = async () =>
      (
        await db.query<{ user_id: string; position: number; status: string }>(
          `SELECT o.user_id, e.position, o.status FROM orders o
             JOIN (SELECT sale_id, user_id, place AS position FROM raffle_places) e
         ON e.sale_id = o.sale_id AND e.user_id = o.user_id
            WHERE o.sale_id = $1 ORDER BY e.position`,
          [saleId],
        )
      ).rows;
    await until('the winners recorded', async () => (await winners()).length >= STOCK, 150_000);
    const { rows: raffle } = await db.query('SELECT phase, entries FROM raffles WHERE sale_id = $1', [
      saleId,
    ]);
    expect(raffle).toEqual([{ phase: 'drawn', entries: ENTRANTS }]);
    const served = await winners();
    expect(served.map((w) => w.position)).toEqual(Array.from({ length: STOCK }, (_, i) => i + 1));
    expect(served.filter((w) => w.status === 'rejected')).toEqual([]);
    const { rows: entries } = await db.query<{ user_id: string; entry_hash: string; position: number }>(
      `SELECT e.user_id, e.entry_hash, p.place AS position FROM raffle_entries e
       LEFT JOIN raffle_places p ON p.sale_id = e.sale_id AND p.user_id = e.user_id
      WHERE e.sale_id = $1 ORDER BY p.place`,
      [saleId],
    );
    expect(entries.map((e) => e.user_id).sort()).toEqual(
      Array.from({ length: ENTRANTS }, (_, i) => `e${i}`).sort(),
    );
    expect(entries.map((e) => e.position)).toEqual(entries.map((_, i) => i + 1));
    const { rows: sale } = await db.query<{ sold: number; max: number }>(
      `SELECT s.sold, (SELECT max(quantity)::int FROM purchases WHERE sale_id = s.id) AS max
         FROM sales s WHERE s.id = $1`,
      [saleId],
    );
    expect(sale[0]).toEqual({ sold: STOCK, max: 1 });

    const published = await retrying(() => call(b, 'GET', `/api/sales/${saleId}/raffle/entries`, 'anyone'));
    const data = published.body as { seed: string; entries: Array<{ hash: string }> };
    expect(
      drawOrder(
        data.seed,
        data.entries.map((e) => e.hash),
      ),
    ).toEqual(entries.map((e) => e.entry_hash));
    expect(cluster.problems()).toEqual([]);
  }, 300_000);
});
