import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { seeded } from '../../src/lab/fairness/run.js';
import { roomKeys } from '../../src/sale/room/keys.js';
import { WaitingRoom } from '../../src/sale/room/room.js';
import { loadServiceKey } from '../../src/sale/store/signing-key.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();

/**
 * Mann–Whitney U test of "neither group tends to come first" (normal approximation with the tie
 * correction; fine for groups of 100). Returns the z score; |z| > 3.29 is p < 0.001, two-sided.
 */
export function mannWhitneyZ(a: readonly number[], b: readonly number[]): number {
  const all = [...a.map((v) => ({ v, g: 0 })), ...b.map((v) => ({ v, g: 1 }))].sort((x, y) => x.v - y.v);
  const n = all.length;
  const ranks = new Array<number>(n);
  let tieTerm = 0;
  for (let i = 0; i < n;) {
    let j = i;
    while (j + 1 < n && all[j + 1]?.v === all[i]?.v) j++;
    const rank = (i + j + 2) / 2;
    for (let k = i; k <= j; k++) ranks[k] = rank;
    const t = j - i + 1;
    tieTerm += t * t * t - t;
    i = j + 1;
  }
  const rankSumA = all.reduce((sum, x, i) => (x.g === 0 ? sum + (ranks[i] ?? 0) : sum), 0);
  const [n1, n2] = [a.length, b.length];
  const u = rankSumA - (n1 * (n1 + 1)) / 2;
  const mean = (n1 * n2) / 2;
  const variance = ((n1 * n2) / 12) * (n + 1 - tieTerm / (n * (n - 1)));
  return (u - mean) / Math.sqrt(variance);
}

describe('waiting room fairness', () => {
  it('the test itself: FIFO by arrival is flagged, a random order is not', () => {
    const early = Array.from({ length: 100 }, (_, i) => i);
    const late = Array.from({ length: 100 }, (_, i) => 100 + i);
    expect(Math.abs(mannWhitneyZ(early, late))).toBeGreaterThan(3.29);
    const random = seeded(7);
    const a = Array.from({ length: 100 }, () => Math.floor(random() * 20));
    const b = Array.from({ length: 100 }, () => Math.floor(random() * 20));
    expect(Math.abs(mannWhitneyZ(a, b))).toBeLessThan(3.29);
  });

  /**
   * Runs one crowd through a room: every other buyer slow (150–2,650 ms more before each request
   * arrives, beyond the 1 s shuffle window, and asking less often), and returns the Mann–Whitney z of
   * slow against fast admission times (positive: slow later), from the record of admissions (Redis,
   * the room's clock), not from what the clients saw.
   */
  async function crowd(name: string, opensInMs: number) {
    const BUYERS = 200;
    const sale = await env.service.createSale({
      name,
      stock: 1,
      startsAt: new Date(Date.now() + opensInMs),
      room: { ratePerSec: 50, shuffleSeconds: 1 },
    });
    const room = new WaitingRoom(
      env.context,
      env.service.rooms,
      'fairness-secret-0123456789',
      await loadServiceKey(env.db),
    );
    const random = seeded(39);
    const buyers = Array.from({ length: BUYERS }, (_, i) => ({
      id: `fair-${i}`,
      slow: i % 2 === 1,
      delayMs: i % 2 === 1 ? 150 + Math.floor(random() * 2500) : 0,
    }));
    const clients = buyers.map(async (buyer) => {
      if (buyer.delayMs > 0) await sleep(buyer.delayMs); // the client's latency, not synchronisation
      const joined = await room.join(sale.id, buyer.id);
      if (!joined.ok) throw new Error(joined.message);
      let standing = joined;
      while (standing.state === 'waiting') {
        await sleep(100 + (buyer.slow ? 100 : 0)); // slow clients also ask less often
        const asked = await room.check(sale.id, buyer.id, standing.ticket);
        if (!asked.ok) throw new Error(asked.message);
        standing = asked;
      }
    });
    await Promise.all(clients);
    const admitted = await env.redis.hgetall(roomKeys(sale.id).admitted);
    expect(Object.keys(admitted)).toHaveLength(BUYERS);
    const timesOf = (slow: boolean) =>
      buyers.filter((b) => b.slow === slow).map((b) => Number(admitted[b.id]));
    const order = buyers.map((b) => ({ ...b, at: Number(admitted[b.id]) })).sort((x, y) => x.at - y.at);
    return {
      z: mannWhitneyZ(timesOf(true), timesOf(false)),
      slowInFirstHalf: order.slice(0, BUYERS / 2).filter((b) => b.slow).length,
    };
  }

  it('a crowd waiting for the opening is admitted regardless of latency, even latency beyond the shuffle window (Mann–Whitney, p < 0.001)', async () => {
    // Everyone joins before the sale opens (the slowest 2.65 s after the fastest; it opens in 6 s):
    // all of them are in the first window, placed at random.
    const { z, slowInFirstHalf } = await crowd('fair room, crowd before the opening', 6_000);
    expect(
      Math.abs(z),
      `z = ${z.toFixed(2)} (slow clients admitted ${z > 0 ? 'later' : 'earlier'})`,
    ).toBeLessThan(3.29);
    expect(slowInFirstHalf).toBeGreaterThan(20);
  }, 120_000);

  it('negative control: the same crowd arriving after the opening, its latencies beyond the window, shows the bias', async () => {
    // The sale is open: windows of 1 s go in arrival order, and most slow clients arrive after the
    // first window. The same statistic must see it, or the test above proves nothing.
    const { z, slowInFirstHalf } = await crowd('fair room, crowd after the opening', 0);
    expect(z, `z = ${z.toFixed(2)}`).toBeGreaterThan(3.29);
    expect(slowInFirstHalf).toBeLessThan(40);
  }, 120_000);
});
