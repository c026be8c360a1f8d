import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { roomKeys } from '../../src/sale/room/keys.js';
import { apiClient } from '../helpers/api-client.js';
import { useServeProcesses } from '../helpers/serve-processes.js';
import { until } from '../helpers/until.js';

const SECRET = 'room-processes-secret-0123456789';
const RATE = 8; // admissions per second, in total
const BUYERS = 60;
const STOCK = 40;

const stack = useServeProcesses(2, SECRET);
const request = apiClient(SECRET);
let redis: Redis;
beforeAll(() => {
  redis = new Redis(stack.redisUrl);
});
afterAll(() => {
  redis?.disconnect();
});

const post = (server: string, path: string, user: string, body?: object, headers?: Record<string, string>) =>
  request<Record<string, string & number>>('POST', `${server}${path}`, user, { body, headers });

describe('waiting room across two serve processes', () => {
  it('admits at the set rate in total, and no order is recorded for a buyer not admitted before it', async () => {
    const created = await post(stack.server(0), '/api/sales', 'admin', {
      name: 'room across processes',
      stock: STOCK,
      room: { ratePerSec: RATE, shuffleSeconds: 1, noticeSeconds: 1 },
    });
    expect(created.status).toBe(201);
    const saleId = String(created.body.id);
    const orders = `/api/sales/${saleId}/orders`;
    const admissions: string[] = [];
    const admittedBy = new Set<number>();
    const answers: number[] = [];
    const refusals: string[] = [];

    // Every buyer starts before any is awaited; each asks both processes, in turn.
    const buyers = Array.from({ length: BUYERS }, async (_, i) => {
      const user = `buyer-${i}`;
      const at = (k: number) => stack.server(i + k);
      const bypass = await post(at(0), orders, user);
      refusals.push(String(bypass.body.error));
      const joined = await post(at(1), `/api/sales/${saleId}/room/tickets`, user);
      expect(joined.status, JSON.stringify(joined.body)).toBe(201);
      let standing = joined.body;
      let asks = 0;
      while (standing.state !== 'admitted') {
        await sleep(150); // how often a client asks: not synchronisation
        const asked = await post(at(++asks), `/api/sales/${saleId}/room/check`, user, {
          ticket: standing.ticket,
        });
        expect(asked.status, JSON.stringify(asked.body)).toBe(200);
        standing = asked.body;
        if (standing.state === 'admitted') admittedBy.add((i + asks) % 2);
      }
      // Someone else's admission is refused; one's own sells.
      const borrowed = admissions[admissions.length - 1];
      if (borrowed)
        refusals.push(
          (await post(at(0), orders, user, undefined, { admission: borrowed })).body
            .error as unknown as string,
        );
      admissions.push(String(standing.admission));
      // The admission is valid from the end of its notice period (told in the answer; judged on the
      // Redis clock, and a timer may fire a ms early: a client waits a little longer).
      await sleep(Math.max(0, Date.parse(String(standing.admissionValidFrom)) - Date.now()) + 20);
      const bought = await post(at(1), orders, user, undefined, { admission: String(standing.admission) });
      answers.push(bought.status);
    });
    await Promise.all(buyers);

    // Without one's own admission: refused (or told "sold out" once it is: that is public).
    expect(refusals).toHaveLength(2 * BUYERS - 1);
    expect(
      refusals.filter((e) => !['admission_required', 'admission_invalid', 'sold_out'].includes(e)),
    ).toEqual([]);
    expect(refusals.slice(0, BUYERS)).toContain('admission_required');
    expect(answers.filter((s) => s === 202)).toHaveLength(STOCK);
    expect(
      answers.filter((s) => s !== 202).every((s) => s === 409),
      String(answers),
    ).toBe(true);
    expect(admittedBy.size).toBe(2); // both processes handed out admissions

    // From the record: PostgreSQL's orders (once the pipelines have written them) and the room's
    // admissions in Redis, both stamped by the Redis clock.
    const recorded = async () =>
      (
        await stack.db.query<{ user_id: string; reserved_ms: string }>(
          `SELECT user_id, (extract(epoch FROM reserved_at) * 1000)::bigint::text AS reserved_ms
             FROM orders WHERE sale_id = $1 AND status = 'confirmed'`,
          [saleId],
        )
      ).rows;
    await until(
      'the pipelines to record every order',
      async () => (await recorded()).length === STOCK,
      60_000,
    );
    const admitted = await redis.hgetall(roomKeys(saleId).admitted);
    for (const order of await recorded()) {
      const admittedAt = Number(admitted[order.user_id]);
      expect(admittedAt, `${order.user_id} bought without an admission`).toBeGreaterThan(0);
      expect(admittedAt).toBeLessThanOrEqual(Number(order.reserved_ms));
    }

    // The pace, in total: by any admission's time t, at most 1 + rate × (t − first join) admitted
    // (the bucket's bound; two processes each pacing on its own would admit twice that).
    const firstJoin = Number(await redis.hget(roomKeys(saleId).state, 'firstJoin'));
    const times = Object.values(admitted)
      .map(Number)
      .sort((a, b) => a - b);
    expect(times).toHaveLength(BUYERS);
    times.forEach((t, i) => {
      expect(i + 1, `admission ${i + 1} at +${t - firstJoin} ms`).toBeLessThanOrEqual(
        1 + (RATE * (t - firstJoin)) / 1000 + 1e-6,
      );
    });
  }, 120_000);

  it('fails closed: after Redis lost a sale and its room, no purchase without an admission is recorded while PostgreSQL is down', async () => {
    // Two room sales, created on process 0; process 1 never looks at either before the outage, so
    // it learns their rooms only from Redis or the record.
    const create = async (name: string) => {
      const created = await post(stack.server(0), '/api/sales', 'admin', {
        name,
        stock: 5,
        room: { ratePerSec: 1, shuffleSeconds: 600 }, // nobody is admitted during this test
      });
      expect(created.status).toBe(201);
      return String(created.body.id);
    };
    const rebuilt = await create('room rebuilt by the recovery');
    const roomless = await create('room deleted behind the service');

    // Redis loses everything; the processes' monitors rebuild both sales from the record.
    await redis.flushall();
    await until(
      'both sales rebuilt in Redis',
      async () => (await redis.exists(saleKeys(rebuilt).stock, saleKeys(roomless).stock)) === 2,
      60_000,
    );
    // The rebuild put each room back with the stock (judged from Redis itself).
    expect(await redis.hget(roomKeys(rebuilt).config, 'rate')).toBe('1');
    expect(await redis.hget(roomKeys(roomless).config, 'rate')).toBe('1');
    // An adversary (or a partial loss) takes one room away again while its stock stays.
    await redis.del(roomKeys(roomless).config);

    await stack.postgres.stopImmediately();
    try {
      const bypass = await post(stack.server(1), `/api/sales/${rebuilt}/orders`, 'never-admitted-1');
      expect(bypass.status, JSON.stringify(bypass.body)).toBe(403);
      expect(bypass.body.error).toBe('admission_required');
      // Its room unknown (not in Redis, the record down): refused as unavailable, never sold.
      const blind = await post(stack.server(1), `/api/sales/${roomless}/orders`, 'never-admitted-2');
      expect(blind.status, JSON.stringify(blind.body)).toBe(503);
      expect(blind.body.error).toBe('service_unavailable');
    } finally {
      await stack.postgres.restart();
    }
    // Once the record answers again, the room is put back and still guards the sale.
    await until(
      'the record to answer through process 1',
      async () =>
        (await post(stack.server(1), `/api/sales/${roomless}/orders`, 'never-admitted-2')).status !== 503,
      60_000,
    );
    expect(await redis.hget(roomKeys(roomless).config, 'rate')).toBe('1');
    expect(
      (await post(stack.server(1), `/api/sales/${roomless}/orders`, 'never-admitted-2')).body.error,
    ).toBe('admission_required');

    // From what was recorded: no reservation entered either sale's stream, and the record holds no
    // order of either (the stream is read first: an entry leaves it only once it is recorded).
    for (const saleId of [rebuilt, roomless]) {
      expect(await redis.xlen(saleKeys(saleId).stream)).toBe(0);
      const orders = await stack.db.query('SELECT id FROM orders WHERE sale_id = $1', [saleId]);
      expect(orders.rows).toEqual([]);
    }
  }, 180_000);

  it('holds the active-buyer cap across both processes, judged from the recorded admission and order times', async () => {
    const CAP = 3;
    const buyersCount = 16;
    const created = await post(stack.server(0), '/api/sales', 'admin', {
      name: 'room with a cap across processes',
      stock: buyersCount,
      room: { ratePerSec: 50, shuffleSeconds: 1, noticeSeconds: 0, maxActive: CAP },
    });
    expect(created.status).toBe(201);
    const saleId = String(created.body.id);
    const orders = `/api/sales/${saleId}/orders`;
    // A client as a browser would be: a 503 (a dependency busy on a loaded machine) is asked again,
    // a purchase with the same Idempotency-Key.
    const retrying = async (ask: () => ReturnType<typeof post>) => {
      for (let tries = 1; ; tries++) {
        const answer = await ask();
        if (answer.status !== 503 || tries === 20) return answer;
        await sleep(200);
      }
    };
    const buyers = Array.from({ length: buyersCount }, async (_, i) => {
      const user = `capped-${i}`;
      const at = (k: number) => stack.server(i + k);
      const joined = await retrying(() => post(at(0), `/api/sales/${saleId}/room/tickets`, user));
      expect(joined.status, JSON.stringify(joined.body)).toBe(201);
      let standing = joined.body;
      for (let asks = 1; standing.state !== 'admitted'; asks++) {
        await sleep(100); // how often a client asks: not synchronisation
        const asked = await retrying(() =>
          post(at(asks), `/api/sales/${saleId}/room/check`, user, { ticket: standing.ticket }),
        );
        expect(asked.status, JSON.stringify(asked.body)).toBe(200);
        standing = asked.body;
      }
      // How long a buyer takes to decide: long beside the pace (50/s), so the cap, not the pace, is
      // what holds the others back.
      await sleep(300 + (i % 4) * 100);
      const headers = { admission: String(standing.admission), 'idempotency-key': `capped-${i}` };
      const bought = await retrying(() => post(at(1), orders, user, undefined, headers));
      expect(bought.status, JSON.stringify(bought.body)).toBe(202);
    });
    await Promise.all(buyers);

    // From the record: admissions (Redis clock, ms) and orders (reserved_at: the stream entry's time
    // on the Redis clock). At every admission, the buyers admitted and not yet done are at most CAP.
    const recorded = async () =>
      (
        await stack.db.query<{ user_id: string; reserved_ms: string }>(
          `SELECT user_id, (extract(epoch FROM reserved_at) * 1000)::bigint::text AS reserved_ms
             FROM orders WHERE sale_id = $1`,
          [saleId],
        )
      ).rows;
    await until(
      'the pipelines to record every order',
      async () => (await recorded()).length === buyersCount,
      60_000,
    );
    const doneAt = new Map((await recorded()).map((o) => [o.user_id, Number(o.reserved_ms)]));
    const admitted = Object.entries(await redis.hgetall(roomKeys(saleId).admitted)).map(
      ([user, at]) => [user, Number(at)] as const,
    );
    expect(admitted).toHaveLength(buyersCount);
    let most = 0;
    for (const [, t] of admitted) {
      const active = admitted.filter(([user, at]) => at <= t && (doneAt.get(user) ?? Infinity) > t).length;
      most = Math.max(most, active);
    }
    expect(most, 'buyers admitted and not yet done at once').toBeLessThanOrEqual(CAP);
    expect(most).toBe(CAP); // the cap was reached: the check had something to hold back
  }, 180_000);
});
