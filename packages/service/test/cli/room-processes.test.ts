import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PostgresServer, RedisServer } from '@lockstock/servers';
import { signToken } from '../../src/http/auth.js';
import { roomKeys } from '../../src/sale/room/keys.js';
import { spawnCli, waitUntilHealthy, type CliProcess } from '../helpers/cli.js';
import { until } from '../helpers/until.js';

const SECRET = 'room-processes-secret-0123456789';
const RATE = 8; // admissions per second, in total
const BUYERS = 60;
const STOCK = 40;

let redisServer: RedisServer;
let postgres: PostgresServer;
let redis: Redis;
let db: pg.Pool;
const processes: CliProcess[] = [];
const servers: string[] = [];

beforeAll(async () => {
  [redisServer, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  redis = new Redis(redisServer.url);
  db = new pg.Pool({ connectionString: postgres.url, max: 2 });
  db.on('error', () => undefined); // idle connections see the server shut down at the end
  const env = {
    LOCKSTOCK_JWT_SECRET: SECRET,
    LOCKSTOCK_RATE_LIMIT_PER_IP: '0',
    LOCKSTOCK_RATE_LIMIT_PER_USER: '0',
    LOCKSTOCK_PROCESSES: '1',
  };
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const urls = ['--redis', redisServer.url, '--database', postgres.url];
    processes.push(spawnCli(['serve', '--port', String(port), ...urls], env));
    servers.push(`http://127.0.0.1:${port}`);
    await waitUntilHealthy(`${servers[i]}/healthz`); // one at a time: they migrate the same database
  }
}, 120_000);

afterAll(async () => {
  for (const p of processes) p.kill('SIGTERM');
  await Promise.all(processes.map((p) => p.exited));
  redis?.disconnect();
  await db?.end();
  await Promise.all([redisServer?.stop(), postgres?.stop()]);
});

async function post(server: string, path: string, user: string, body?: object, headers: object = {}) {
  const response = await fetch(`${server}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${signToken(SECRET, user, { admin: user === 'admin' })}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string & number> };
}

describe('waiting room across two serve processes', () => {
  it('admits at the set rate in total, and no order is recorded for a buyer not admitted before it', async () => {
    const created = await post(servers[0] as string, '/api/sales', 'admin', {
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
      const at = (k: number) => servers[(i + k) % 2] as string;
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
      // The admission is valid from the end of its notice period (told in the answer).
      await sleep(Math.max(0, Date.parse(String(standing.admissionValidFrom)) - Date.now()));
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
    expect(answers.filter((s) => s !== 202).every((s) => s === 409)).toBe(true);
    expect(admittedBy.size).toBe(2); // both processes handed out admissions

    // From the record: PostgreSQL's orders (once the pipelines have written them) and the room's
    // admissions in Redis, both stamped by the Redis clock.
    const recorded = async () =>
      (
        await db.query<{ user_id: string; reserved_ms: string }>(
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
});
