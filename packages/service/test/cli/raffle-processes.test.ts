import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { drawOrder } from '../../src/sale/raffle/verify.js';
import { apiClient } from '../helpers/api-client.js';
import { runCli } from '../helpers/cli.js';
import { useServeProcesses } from '../helpers/serve-processes.js';
import { until } from '../helpers/until.js';

const SECRET = 'raffle-processes-secret-012345678';
const ENTRANTS = 120;
const STOCK = 30;
const CANCELLED = 6;

const stack = useServeProcesses(3, SECRET);
const { server } = stack;
const request = apiClient(SECRET);
const call = (method: string, url: string, user: string, body?: object) =>
  request(method, url, user, { body });

/** Orders of the sale as recorded, each with its buyer's place in the draw order. */
async function recordedWinners(saleId: string) {
  const { rows } = await stack.db.query<{ user_id: string; position: number; status: string; id: string }>(
    `SELECT o.user_id, e.position, o.status, o.id::text AS id FROM orders o
       JOIN (SELECT sale_id, user_id, place AS position FROM raffle_places) e
         ON e.sale_id = o.sale_id AND e.user_id = o.user_id
      WHERE o.sale_id = $1 ORDER BY e.position`,
    [saleId],
  );
  return rows;
}

describe('a raffle sale across three serve processes', () => {
  it('one entry and at most one unit per buyer, winners ≤ stock, the waitlist in draw order, a draw anyone recomputes', async () => {
    const created = await call('POST', `${server(0)}/api/sales`, 'admin', {
      name: 'raffle across processes',
      stock: STOCK,
      admission: 'raffle',
      drawAt: new Date(Date.now() + 3_600_000).toISOString(),
      payWithinSeconds: 3_600,
    });
    expect(created.status).toBe(201);
    const saleId = String(created.body.id);
    const before = await call('GET', `${server(1)}/api/sales/${saleId}/raffle`, 'anyone');
    expect(before.body).toMatchObject({ phase: 'entries', stock: STOCK });
    expect(before.body.seed).toBeUndefined();
    const seedHash = String(before.body.seedHash);

    // Every entrant enters twice, on two processes, and tries to buy; all started before any is awaited.
    const users = Array.from({ length: ENTRANTS }, (_, i) => `entrant-${i}`);
    const answers = await Promise.all(
      users.flatMap((user, i) => [
        call('POST', `${server(i)}/api/sales/${saleId}/raffle/entries`, user),
        call('POST', `${server(i + 1)}/api/sales/${saleId}/raffle/entries`, user),
        call('POST', `${server(i + 2)}/api/sales/${saleId}/orders`, user),
      ]),
    );
    const entries = answers.filter((_, i) => i % 3 !== 2);
    const purchases = answers.filter((_, i) => i % 3 === 2);
    expect(entries.map((a) => a.status)).toEqual(entries.map(() => 202));
    expect(entries.filter((a) => a.body.duplicate === false)).toHaveLength(ENTRANTS);
    expect(new Set(purchases.map((a) => a.status))).toEqual(new Set([409]));

    // The draw, asked of every process at once: one runs it.
    const draws = await Promise.all(
      stack.servers.map((s) => call('POST', `${s}/api/sales/${saleId}/raffle/draw`, 'admin')),
    );
    // (Each process's runner races the three requests too, once the window is closed: at most one
    // request says it drew, and the record holds one draw of every entry.)
    expect(draws.map((d) => d.status)).toEqual([200, 200, 200]);
    expect(draws.filter((d) => d.body.result === 'drawn').length).toBeLessThanOrEqual(1);
    const { rows: raffle } = await stack.db.query('SELECT phase, entries FROM raffles WHERE sale_id = $1', [
      saleId,
    ]);
    expect(raffle).toEqual([{ phase: 'drawn', entries: ENTRANTS }]);

    // The processes' runners serve the winners; the record gets them.
    await until('the winners recorded', async () => (await recordedWinners(saleId)).length === STOCK, 60_000);
    let winners = await recordedWinners(saleId);
    expect(winners.map((w) => w.position)).toEqual(Array.from({ length: STOCK }, (_, i) => i + 1));

    // Some winners cancel, on different processes: their units go to the next entrants in draw order.
    const cancels = await Promise.all(
      winners
        .slice(0, CANCELLED)
        .map((w, i) => call('POST', `${server(i)}/api/orders/${w.id}/cancel`, w.user_id)),
    );
    expect(cancels.map((c) => c.status)).toEqual(cancels.map(() => 200));
    await until(
      'the waitlist served',
      async () => (await recordedWinners(saleId)).length === STOCK + CANCELLED,
      60_000,
    );

    // Judged from the record: one entry per buyer, each place once, one order per entrant, the served
    // places a prefix of the draw order, never more units held than the stock.
    winners = await recordedWinners(saleId);
    expect(winners.map((w) => w.position)).toEqual(
      Array.from({ length: STOCK + CANCELLED }, (_, i) => i + 1),
    );
    expect(new Set(winners.map((w) => w.user_id)).size).toBe(winners.length);
    // Every unit a winner gave back reached the next entrant: no order was recorded as rejected (the
    // waitlist serves a unit only once the record has its return).
    expect(winners.filter((w) => w.status === 'rejected')).toEqual([]);
    const { rows: recorded } = await stack.db.query<{
      user_id: string;
      entry_hash: string;
      position: number;
    }>(
      `SELECT e.user_id, e.entry_hash, p.place AS position FROM raffle_entries e
       LEFT JOIN raffle_places p ON p.sale_id = e.sale_id AND p.user_id = e.user_id
      WHERE e.sale_id = $1 ORDER BY p.place`,
      [saleId],
    );
    expect(recorded.map((r) => r.user_id).sort()).toEqual([...users].sort());
    expect(recorded.map((r) => r.position)).toEqual(users.map((_, i) => i + 1));
    const { rows: sale } = await stack.db.query<{ sold: number; held: number; max: number }>(
      `SELECT s.sold, (SELECT coalesce(sum(quantity), 0)::int FROM purchases WHERE sale_id = s.id) AS held,
              (SELECT coalesce(max(quantity), 0)::int FROM purchases WHERE sale_id = s.id) AS max
         FROM sales s WHERE s.id = $1`,
      [saleId],
    );
    expect(sale[0]).toEqual({ sold: STOCK, held: STOCK, max: 1 });

    // The published data: the seed matches the commitment, and the order recomputed from it and the
    // hashed entries alone (not the service's SQL) is the recorded one.
    const published = await call('GET', `${server(2)}/api/sales/${saleId}/raffle/entries`, 'anyone');
    const data = published.body as { seed: string; seedHash: string; entries: Array<{ hash: string }> };
    expect(data.seedHash).toBe(seedHash);
    expect(
      drawOrder(
        data.seed,
        data.entries.map((e) => e.hash),
      ),
    ).toEqual(recorded.map((r) => r.entry_hash));
    // Every entrant holds a receipt signed by the service's published key, with the commitment.
    const key = await call('GET', `${server(0)}/.well-known/lockstock/raffle-key`, 'anyone');
    expect(key.body).toMatchObject({ algorithm: 'Ed25519' });
    type Receipt = { kid: string; payload: { commitment: { seedHash: string } } };
    const receipts = entries.map((a) => a.body.receipt as Receipt);
    expect(receipts.every((r) => r.kid === key.body.kid)).toBe(true);
    expect(receipts.every((r) => r.payload.commitment.seedHash === seedHash)).toBe(true);
    const winnerAnswer = entries[2 * users.indexOf(winners[0]!.user_id)]!;
    const dir = mkdtempSync(join(tmpdir(), `raffle-${saleId}-`));
    const receiptFile = join(dir, 'receipt.json');
    writeFileSync(receiptFile, JSON.stringify(winnerAnswer.body));
    const verified = await runCli(['raffle', 'verify', server(1), '--receipt', receiptFile]);
    expect(verified.stdout).toContain('verified');
    expect(verified.stdout).toContain('your entry: place 1, given a unit');
    expect(verified.stdout).toContain('note no randomness beacon in the commitment: commit–reveal only');
    expect(verified.code).toBe(0);
    // With nothing held apart from the document, nothing is verified.
    const unheld = await runCli([
      'raffle',
      'verify',
      server(1),
      '--sale',
      saleId,
      '--user',
      winners[0]!.user_id,
    ]);
    expect(unheld.stdout).toContain('FAIL no commitment held apart from the document');
    expect(unheld.code).toBe(1);
    // A list where a loser is marked as given a unit fails the verification.
    const forged = join(dir, 'forged.json');
    const entriesBody = published.body.entries as Array<{ position: number; won: boolean }>;
    writeFileSync(
      forged,
      JSON.stringify({
        ...published.body,
        entries: entriesBody.map((e) => (e.position === ENTRANTS ? { ...e, won: true } : e)),
      }),
    );
    const refused = await runCli(['raffle', 'verify', forged, '--receipt', receiptFile]);
    expect(refused.stdout).toContain('NOT verified');
    expect(refused.code).toBe(1);

    const view = await call('GET', `${server(0)}/api/sales/${saleId}/raffle`, 'anyone');
    expect(view.body).toMatchObject({
      phase: 'drawn',
      entries: ENTRANTS,
      winners: STOCK + CANCELLED,
      paid: 0,
    });
    expect(view.body.waitlist).toBe(ENTRANTS - STOCK - CANCELLED);
    // The dashboard's feed says the same (its snapshot is a second old at most: asked until it does).
    const expected = { phase: 'drawn', entries: ENTRANTS, winners: STOCK + CANCELLED, paid: 0 };
    await until('the dashboard shows the raffle', async () => {
      const dashboard = await call('GET', `${server(1)}/api/dashboard`, 'anyone');
      const sales = dashboard.body.sales as Array<{ id: string; raffle?: Record<string, unknown> }>;
      const raffle = sales.find((s) => s.id === saleId)?.raffle;
      return raffle !== undefined && Object.entries(expected).every(([k, v]) => raffle[k] === v);
    });
  }, 180_000);
});
