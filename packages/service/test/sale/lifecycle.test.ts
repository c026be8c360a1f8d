import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { saleContext } from '../../src/sale/context/context.js';
import { saleKeys } from '../../src/sale/keys.js';
import { ExpirySweeper } from '../../src/sale/lifecycle/sweeper.js';
import { reconcile } from '../../src/sale/reconcile.js';
import { toFieldMap, type SaleService } from '../../src/sale/service.js';
import type { OrderActionResult, Sale } from '../../src/sale/types.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();
/** Two more instances of the service (own Redis and PostgreSQL connections), for the races. */
const others: SaleService[] = [];
beforeAll(async () => {
  for (let i = 0; i < 2; i++) others.push((await env.instance()).service);
});

interface Row {
  id: string;
  user_id: string;
  quantity: number;
  status: string;
}

async function rows(saleId: string): Promise<Row[]> {
  const { rows } = await env.db.query<Row>(
    'SELECT id::text AS id, user_id, quantity, status FROM orders WHERE sale_id = $1',
    [saleId],
  );
  return rows;
}

async function recordedSold(saleId: string): Promise<number> {
  const { rows } = await env.db.query<{ sold: number }>('SELECT sold FROM sales WHERE id = $1', [saleId]);
  return rows[0]?.sold ?? -1;
}

async function holdings(saleId: string): Promise<Record<string, number>> {
  const { rows } = await env.db.query<{ user_id: string; quantity: number }>(
    'SELECT user_id, quantity FROM purchases WHERE sale_id = $1 AND quantity > 0',
    [saleId],
  );
  return Object.fromEntries(rows.map((r) => [r.user_id, r.quantity]));
}

/** Reserves one unit for each user, all attempts started before any is awaited; returns order ids. */
async function reserveAll(sale: Sale, users: string[]): Promise<Map<string, string>> {
  const results = await Promise.all(
    users.map((userId) => env.service.buy({ saleId: sale.id, userId, quantity: 1 })),
  );
  const orders = new Map<string, string>();
  results.forEach((result, i) => {
    if (result.ok) orders.set(users[i] as string, result.orderId);
  });
  return orders;
}

const stateOf = (result: OrderActionResult) => (result.ok ? result.order.status : result.code);

/**
 * The settlements a sale's stream holds, order → states (read before a pipeline trims them): Redis
 * appends one each time its script settles an order, so a state twice means settled twice.
 */
async function settlementsInStream(saleId: string): Promise<Map<string, string[]>> {
  const entries = (await env.redis.xrange(saleKeys(saleId).stream, '-', '+')) as Array<[string, string[]]>;
  const byOrder = new Map<string, string[]>();
  for (const [, fields] of entries) {
    const { event, order } = toFieldMap(fields);
    if (event !== undefined && order !== undefined)
      byOrder.set(order, [...(byOrder.get(order) ?? []), event]);
  }
  return byOrder;
}

/**
 * Brings the payment deadline of the sale's orders still open for payment forward to `atMs`, in the
 * record (what a payment is checked against) and in the sweepers' schedule alike, as if their window
 * had been that short: the test decides when the deadline comes instead of betting that its serial
 * part fits in a short window. Returns the orders moved.
 */
async function moveDeadlines(saleId: string, atMs: number): Promise<string[]> {
  const { deadlines } = saleKeys(saleId);
  const members = await env.redis.zrange(deadlines, 0, -1);
  const ids = members.map((member) => member.split(':')[0] as string);
  const { rows: moved } = await env.db.query<{ id: string }>(
    `UPDATE orders SET pay_by = $2 WHERE id = ANY($1::bigint[]) AND status = 'confirmed'
     RETURNING id::text AS id`,
    [ids, new Date(atMs)],
  );
  expect(moved.length).toBe(ids.length); // the schedule and the record agree on what is open
  for (const member of members) await env.redis.zadd(deadlines, 'XX', atMs, member);
  return ids;
}

/** Units held (confirmed or paid orders) + units back on sale: every unit is one or the other. */
async function unitAccount(saleId: string) {
  const held = (await rows(saleId))
    .filter((r) => r.status === 'confirmed' || r.status === 'paid')
    .reduce((sum, r) => sum + r.quantity, 0);
  const onSale = Number(await env.redis.get(saleKeys(saleId).stock));
  return { held, onSale, sold: await recordedSold(saleId) };
}

describe('the order lifecycle: pay or release', () => {
  it('pays and cancels idempotently, refuses what the state forbids, and records each once', async () => {
    const sale = await env.service.createSale({ name: 'pay or cancel', stock: 10, payWithinSeconds: 600 });
    const orders = await reserveAll(sale, ['payer', 'canceller', 'early']);
    const early = await env.service.act(orders.get('early') as string, 'early', 'pay');
    expect(early).toMatchObject({ ok: false, code: 'order_pending' }); // not recorded yet
    await env.pipeline().drain();

    const payer = orders.get('payer') as string;
    const canceller = orders.get('canceller') as string;
    expect(await env.service.getOrder(payer)).toMatchObject({ status: 'confirmed', payBy: expect.any(Date) });
    expect(stateOf(await env.service.act(payer, 'someone-else', 'pay'))).toBe('not_found');
    expect(stateOf(await env.service.act(payer, 'payer', 'pay'))).toBe('paid');
    expect(stateOf(await env.service.act(payer, 'payer', 'pay'))).toBe('paid'); // idempotent
    expect(stateOf(await env.service.act(payer, 'payer', 'cancel'))).toBe('order_paid');
    expect(stateOf(await env.service.act(canceller, 'canceller', 'cancel'))).toBe('cancelled');
    expect(stateOf(await env.service.act(canceller, 'canceller', 'cancel'))).toBe('cancelled');
    expect(stateOf(await env.service.act(canceller, 'canceller', 'pay'))).toBe('order_cancelled');
    // Redis decided; the record has not applied it yet, but the API shows the decision already.
    expect(await env.service.getOrder(canceller)).toMatchObject({ status: 'cancelled' });
    expect(await env.redis.get(saleKeys(sale.id).stock)).toBe('8'); // the cancelled unit is back

    await env.pipeline().drain();
    const byId = new Map((await rows(sale.id)).map((r) => [r.id, r.status]));
    expect(byId.get(payer)).toBe('paid');
    expect(byId.get(canceller)).toBe('cancelled');
    expect(await recordedSold(sale.id)).toBe(2); // payer + early
    expect(await holdings(sale.id)).toEqual({ payer: 1, early: 1 });
    expect(await env.redis.hgetall(saleKeys(sale.id).buyers)).toEqual({ payer: '1', early: '1' });
    // The canceller holds nothing again: they may buy anew.
    expect((await env.service.buy({ saleId: sale.id, userId: 'canceller', quantity: 1 })).ok).toBe(true);
  });

  it('settles each order once when pay and cancel race from two instances, even redelivered to the record', async () => {
    const sale = await env.service.createSale({ name: 'races', stock: 100, payWithinSeconds: 600 });
    const users = Array.from({ length: 100 }, (_, i) => `racer${i}`);
    const orders = await reserveAll(sale, users);
    await env.pipeline().drain();
    // Every pay and every cancel is started before any is awaited, each user's two on different
    // instances (which one pays alternates): their scripts reach Redis on two connections.
    const attempts = users.flatMap((user, i) =>
      (['pay', 'cancel'] as const).map(async (action, j) => ({
        user,
        action,
        result: await (others[(i + j) % 2] as SaleService).act(orders.get(user) as string, user, action),
      })),
    );
    const outcomes = await Promise.all(attempts);
    const final = new Map<string, string>();
    for (const user of users) {
      const [pay, cancel] = outcomes.filter((o) => o.user === user).map((o) => stateOf(o.result));
      // Exactly one wins, and the loser is told why.
      expect([
        ['paid', 'order_paid'],
        ['order_cancelled', 'cancelled'],
      ]).toContainEqual([pay, cancel]);
      final.set(orders.get(user) as string, pay === 'paid' ? 'paid' : 'cancelled');
    }
    // Redis settled each order once, as its buyer was told.
    expect(new Map(Object.entries(await env.redis.hgetall(saleKeys(sale.id).settled)))).toEqual(final);
    expect(await settlementsInStream(sale.id)).toEqual(new Map([...final].map(([id, s]) => [id, [s]])));
    // The pipeline commits the settlements, then "crashes" before acknowledging: they come again.
    let crash = true;
    const crashy = env.pipeline({
      faults: {
        afterCommit: async () => {
          if (crash) throw Object.assign(new Error('crash between commit and XACK'), { code: 'ECONNRESET' });
        },
      },
    });
    await expect(crashy.step(0)).rejects.toThrow('crash between commit and XACK');
    crash = false;
    await crashy.drain();
    const recorded = await rows(sale.id);
    expect(new Map(recorded.map((r) => [r.id, r.status]))).toEqual(final);
    const paid = [...final.values()].filter((s) => s === 'paid').length;
    expect(await unitAccount(sale.id)).toEqual({ held: paid, onSale: 100 - paid, sold: paid });
  });

  it('expires each overdue order once with three sweepers at once, each on its own connection', async () => {
    const sale = await env.service.createSale({ name: 'sweepers', stock: 300, payWithinSeconds: 1 });
    const orders = await reserveAll(
      sale,
      Array.from({ length: 300 }, (_, i) => `late${i}`),
    );
    await env.pipeline().drain();
    const deadline = (await env.service.getOrder(orders.get('late0') as string))?.payBy as Date;
    // As sweepers in three processes would: three connections, so their scripts interleave in Redis.
    const connections = Array.from({ length: 3 }, () => new Redis(env.redisUrl));
    const sweepers = connections.map((redis) => new ExpirySweeper(saleContext(redis), { batchSize: 50 }));
    let expired = 0;
    try {
      await until('every order to expire', async () => {
        if (Date.now() < deadline.getTime()) return false;
        const rounds = await Promise.all(sweepers.map((s) => s.sweep())); // all three at once
        expired += rounds.reduce((sum, r) => sum + r.expired, 0);
        return (await env.redis.zcard(saleKeys(sale.id).deadlines)) === 0;
      });
    } finally {
      for (const redis of connections) redis.disconnect();
    }
    expect(expired).toBe(300);
    // What Redis recorded: one expiry per order, whichever sweeper got to it.
    expect(await settlementsInStream(sale.id)).toEqual(
      new Map([...orders.values()].map((id) => [id, ['expired']])),
    );
    await env.pipeline().drain();
    expect((await rows(sale.id)).every((r) => r.status === 'expired')).toBe(true);
    expect(await unitAccount(sale.id)).toEqual({ held: 0, onSale: 300, sold: 0 });
    expect(await env.redis.hlen(saleKeys(sale.id).buyers)).toBe(0);
  });

  it('1,000 units: 30% never pay, some cancel, some pay at the deadline; later buyers get the units back', async () => {
    const STOCK = 1000;
    // A window no serial part of the test can outlast, however loaded the machine: what must happen
    // before the deadline does; then the deadline is brought forward (moveDeadlines) for what is left.
    const WINDOW_S = 600;
    const sale = await env.service.createSale({
      name: 'lifecycle',
      stock: STOCK,
      perUserLimit: 1,
      payWithinSeconds: WINDOW_S,
    });
    const keys = saleKeys(sale.id);
    const pipelines = [env.pipeline({ blockMs: 50 }), env.pipeline({ blockMs: 50 })];
    const sweepers = [new ExpirySweeper(env.context), new ExpirySweeper(env.context)];
    pipelines.forEach((p) => p.start());
    sweepers.forEach((s) => s.start());
    try {
      const first = Array.from({ length: STOCK }, (_, i) => `first${i}`);
      const orders = await reserveAll(sale, first);
      expect(orders.size).toBe(STOCK);
      await until(
        'the first orders to be recorded and open for payment',
        async () =>
          (await rows(sale.id)).length === STOCK && (await env.redis.zcard(keys.deadlines)) === STOCK,
      );
      const { rows: windowed } = await env.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM orders
          WHERE sale_id = $1 AND pay_by = reserved_at + $2 * interval '1 second'`,
        [sale.id, WINDOW_S],
      );
      expect(windowed[0]?.n).toBe(STOCK); // each deadline is its reservation plus the window

      // Fates by the last digit: 0-2 never pay (30%), 3 cancels, 4 pays at its deadline, 5-8 pay
      // at once, 9 pays and cancels at the same time (through another instance of the service).
      const fate = (i: number) => i % 10;
      const act = (i: number, action: 'pay' | 'cancel', service = env.service) =>
        service.act(orders.get(`first${i}`) as string, `first${i}`, action);
      const started: Array<Promise<{ i: number; action: string; state: string }>> = [];
      const track = (i: number, action: 'pay' | 'cancel', run: () => Promise<OrderActionResult>) =>
        started.push(run().then((result) => ({ i, action, state: stateOf(result) })));
      for (let i = 0; i < STOCK; i++) {
        const f = fate(i);
        if (f === 3) track(i, 'cancel', () => act(i, 'cancel'));
        else if (f >= 5 && f <= 8) track(i, 'pay', () => act(i, 'pay'));
        else if (f === 9) {
          track(i, 'pay', () => act(i, 'pay'));
          track(i, 'cancel', () => act(i, 'cancel', others[0]));
        }
      }
      // The deadline comes for the orders still open (0-2 and 4), a moment from now; 4 pays around
      // it: some just before, some just after (the scenario, not a sync: either answer is accepted,
      // and the record must agree with it).
      await Promise.all(started); // well within the window: their answers are checked below
      const deadline = Date.now() + 1_000;
      const open = first.filter((_, i) => fate(i) <= 2 || fate(i) === 4).map((u) => orders.get(u) as string);
      expect((await moveDeadlines(sale.id, deadline)).sort()).toEqual(open.sort());
      for (let i = 0; i < STOCK; i++) {
        if (fate(i) !== 4) continue;
        const at = deadline + ((i % 7) - 3) * 15;
        track(i, 'pay', () =>
          new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()))).then(() =>
            act(i, 'pay'),
          ),
        );
      }
      const answers = await Promise.all(started);

      // What each buyer was told decides what the order must end as.
      const expected = new Map<string, string>();
      for (let i = 0; i < STOCK; i++) {
        const mine = answers.filter((a) => a.i === i);
        const f = fate(i);
        const orderId = orders.get(`first${i}`) as string;
        const told = mine[0]?.state;
        if (f <= 2) expected.set(orderId, 'expired');
        else if (f === 3) {
          expect([i, told]).toEqual([i, 'cancelled']); // before the deadline
          expected.set(orderId, 'cancelled');
        } else if (f === 4) {
          expect(['paid', 'order_expired']).toContain(told);
          expected.set(orderId, told === 'paid' ? 'paid' : 'expired');
        } else if (f <= 8) {
          expect([i, told]).toEqual([i, 'paid']); // before the deadline
          expected.set(orderId, 'paid');
        } else {
          const pay = mine.find((a) => a.action === 'pay')?.state;
          const cancel = mine.find((a) => a.action === 'cancel')?.state;
          expect([
            ['paid', 'order_paid'],
            ['order_cancelled', 'cancelled'],
          ]).toContainEqual([pay, cancel]);
          expected.set(orderId, pay === 'paid' ? 'paid' : 'cancelled');
        }
      }
      expect([...expected.values()].filter((s) => s === 'paid').length).toBeGreaterThanOrEqual(400);

      // The never-payers' deadlines pass; the sweepers give their units back.
      await until('every unpaid order to expire', async () => (await env.redis.zcard(keys.deadlines)) === 0);
      const released = [...expected.values()].filter((s) => s !== 'paid').length;
      expect(Number(await env.redis.get(keys.stock))).toBe(released);

      // Later buyers, more than there are units back: exactly the returned units are sold again.
      const later = await reserveAll(
        sale,
        Array.from({ length: STOCK }, (_, i) => `later${i}`),
      );
      expect(later.size).toBe(released);

      // After drain: the record agrees with what every buyer was told, and with Redis.
      await Promise.all(pipelines.map((p) => p.stop()));
      await Promise.all(sweepers.map((s) => s.stop()));
      await env.pipeline().drain();
      const recorded = await rows(sale.id);
      const status = new Map(recorded.map((r) => [r.id, r.status]));
      for (const [orderId, state] of expected)
        expect([orderId, status.get(orderId)]).toEqual([orderId, state]);
      for (const orderId of later.values()) expect(status.get(orderId)).toBe('confirmed');

      const account = await unitAccount(sale.id);
      expect(account.held).toBeLessThanOrEqual(STOCK); // paid + reserved <= stock
      expect(account.held + account.onSale).toBe(STOCK); // every unit paid, reserved or back on sale
      expect(account.onSale).toBe(0);
      expect(account.sold).toBe(account.held);
      const perUser = new Map<string, number>();
      for (const r of recorded)
        if (r.status === 'confirmed' || r.status === 'paid')
          perUser.set(r.user_id, (perUser.get(r.user_id) ?? 0) + r.quantity);
      expect([...perUser.values()].every((units) => units <= 1)).toBe(true); // nobody over the limit
      expect(await holdings(sale.id)).toEqual(Object.fromEntries(perUser));
      const buyers = await env.redis.hgetall(keys.buyers);
      expect(Object.fromEntries(Object.entries(buyers).map(([u, n]) => [u, Number(n)]))).toEqual(
        Object.fromEntries(perUser),
      );

      const deps = { context: env.context, db: env.db, service: env.service };
      const [drift] = await reconcile(deps, { saleIds: [sale.id] });
      expect(drift).toMatchObject({
        drift: 0,
        buyersBelowRecord: 0,
        unscheduledOrders: 0,
        inFlightUnits: 0,
        redisRemaining: 0,
      });
    } finally {
      await Promise.all(pipelines.map((p) => p.stop()));
      await Promise.all(sweepers.map((s) => s.stop()));
    }
  }, 60_000);
});
