import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { apiClient } from '../helpers/api-client.js';
import { useServeProcesses } from '../helpers/serve-processes.js';
import { until } from '../helpers/until.js';

/**
 * A sold-out sale's waitlist across two `serve` processes, over real HTTP: holders cancel while bots
 * hammer the open market and the waiters poll for their offers, all at once. Judged from the record:
 * every returned unit reached exactly one waiter, in join order; none reached the open market; none
 * was lost.
 */
const SECRET = 'waitlist-processes-secret-0123456789';
const STOCK = 6;
const RETURNED = 4; // holders who cancel
const WAITERS = 8; // more than the units returned: every one of them must go to the line
const BOTS = 12;

const stack = useServeProcesses(2, SECRET);
const request = apiClient(SECRET);
let redis: Redis;
beforeAll(() => {
  redis = new Redis(stack.redisUrl);
});
afterAll(() => {
  redis?.disconnect();
});

type Body = Record<string, string & number>;
const call = (method: string, server: string, path: string, user: string, headers?: Record<string, string>) =>
  request<Body>(method, `${server}${path}`, user, method === 'POST' ? { body: {}, headers } : { headers });

describe('a waitlist across two serve processes', () => {
  it('returned units reach the line’s head in join order, each exactly once, never the open market', async () => {
    const created = await request<Body>('POST', `${stack.server(0)}/api/sales`, 'admin', {
      body: { name: 'waitlist across processes', stock: STOCK, payWithinSeconds: 600 },
    });
    expect(created.status).toBe(201);
    const saleId = String(created.body.id);
    const orders = `/api/sales/${saleId}/orders`;
    const line = `/api/sales/${saleId}/waitlist`;

    const holderOrders: string[] = [];
    for (let i = 0; i < STOCK; i++) {
      const bought = await call('POST', stack.server(i), orders, `holder-${i}`);
      expect(bought.status, JSON.stringify(bought.body)).toBe(202);
      holderOrders.push(String(bought.body.orderId));
    }
    expect((await call('POST', stack.server(0), orders, 'late')).body.error).toBe('sold_out');
    // The line, in a known order, joined on both processes.
    const waiters = Array.from({ length: WAITERS }, (_, i) => `waiter-${i}`);
    for (const [i, user] of waiters.entries()) {
      const joined = await call('POST', stack.server(i), line, user);
      expect(joined.status, JSON.stringify(joined.body)).toBe(201);
      expect(joined.body).toMatchObject({ state: 'waiting', position: i + 1 });
    }

    // Everyone starts before anyone is awaited: cancellations, bots, waiters, on both processes.
    let bought = 0; // offers bought by waiters
    let botBought = 0; // units the open market sold (none, if the line holds)
    let cancelsDone = 0;
    const allTaken = () => cancelsDone === RETURNED && bought + botBought >= RETURNED;
    const cancels = holderOrders.slice(0, RETURNED).map(async (orderId, i) => {
      for (;;) {
        const answer = await call('POST', stack.server(i), `/api/orders/${orderId}/cancel`, `holder-${i}`);
        if (answer.status === 200) break;
        expect(answer.body.error, JSON.stringify(answer.body)).toBe('order_pending'); // not recorded yet
        await sleep(50); // how often a client retries: not synchronisation
      }
      cancelsDone++;
    });
    const botAnswers: number[] = [];
    const bots = Array.from({ length: BOTS }, async (_, i) => {
      while (!allTaken()) {
        const answer = await call('POST', stack.server(i), orders, `bot-${i}`);
        botAnswers.push(answer.status);
        if (answer.status === 202) botBought++;
        await sleep(5);
      }
    });
    const buyers = waiters.map(async (user, i) => {
      while (!allTaken()) {
        const standing = await call('GET', stack.server(i), line, user);
        expect(standing.status).toBe(200);
        if (standing.body.state === 'offered') {
          const answer = await call('POST', stack.server(i + 1), `${line}/orders`, user, {
            'idempotency-key': `offer-${user}`,
          });
          expect(answer.status, JSON.stringify(answer.body)).toBe(202);
          bought++;
          return;
        }
        await sleep(30); // how often a waiter asks: not synchronisation
      }
    });
    await Promise.all([...cancels, ...bots, ...buyers]);
    expect(botAnswers.length).toBeGreaterThan(0);

    // The record, once the pipeline has applied everything.
    const holdersOf = async () =>
      (
        await stack.db.query<{ user_id: string; units: number }>(
          `SELECT user_id, sum(quantity)::int AS units FROM orders
            WHERE sale_id = $1 AND status IN ('confirmed', 'paid') GROUP BY user_id ORDER BY user_id`,
          [saleId],
        )
      ).rows;
    await until(
      'the record to hold every purchase and cancellation',
      async () => {
        const held = await holdersOf();
        return (
          held.reduce((sum, h) => sum + h.units, 0) === STOCK &&
          held.filter((h) => h.user_id.startsWith('holder-')).length === STOCK - RETURNED
        );
      },
      30_000,
    );
    const held = await holdersOf();
    // No unit reached the open market while buyers waited.
    expect(held.filter((h) => h.user_id.startsWith('bot-'))).toEqual([]);
    // Every returned unit reached exactly one waiter, the line's first RETURNED in join order.
    expect(held.filter((h) => h.user_id.startsWith('waiter-'))).toEqual(
      waiters.slice(0, RETURNED).map((user_id) => ({ user_id, units: 1 })),
    );
    // None lost: the stock is all held, nothing left in Redis's stock or offers.
    expect(held.reduce((sum, h) => sum + h.units, 0)).toBe(STOCK);
    const sold = await stack.db.query<{ sold: number }>('SELECT sold FROM sales WHERE id = $1', [saleId]);
    expect(sold.rows[0]?.sold).toBe(STOCK);
    expect(await redis.get(saleKeys(saleId).stock)).toBe('0');
    expect(await redis.zcard(saleKeys(saleId).offers)).toBe(0);
    // The rest of the line still waits, in order.
    const rest = await call('GET', stack.server(0), line, waiters[RETURNED] as string);
    expect(rest.body).toEqual({ state: 'waiting', position: 1, waiting: WAITERS - RETURNED });
  }, 120_000);
});
