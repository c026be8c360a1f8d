import { Agent } from 'node:http';
import { request } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../src/http/auth.js';
import { freePort, PostgresServer } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy, type CliProcess } from '../helpers/cli.js';

const SECRET = 'e2e-secret-0123456789abcdef';
const CONCURRENCY = 64;

export interface FlashSaleSetup {
  /** What the processes are told to use: a redis:// or redis-cluster:// URL. */
  startRedis(): Promise<{ url: string; stop(): Promise<void> }>;
  buyers: number;
  /** Buyers who press "buy" a second time. */
  repeats: number;
  /** Units of each sale. */
  stock: number;
  /** Sales bought at once (on a Cluster their streams live on different slots). */
  sales: number;
}

/**
 * The flash sale end to end: 3 `serve --workers 0` and 2 `worker` processes on one Redis (or Cluster)
 * and one PostgreSQL; every buyer's requests spread over the servers, all lanes started before any is
 * awaited; afterwards the record must hold exactly the stock of each sale, one order per user, and
 * its order ids must be exactly those of the 202 answers.
 */
export function flashSaleEndToEnd(title: string, setup: FlashSaleSetup): void {
  let redis: { url: string; stop(): Promise<void> };
  let postgres: PostgresServer;
  let db: pg.Pool;
  const processes: CliProcess[] = [];
  const servers: string[] = [];

  beforeAll(async () => {
    [redis, postgres] = await Promise.all([setup.startRedis(), PostgresServer.start()]);
    db = new pg.Pool({ connectionString: postgres.url, max: 2 });
    db.on('error', () => undefined); // idle connections see the server shut down at the end
    const env = {
      LOCKSTOCK_JWT_SECRET: SECRET,
      LOCKSTOCK_RATE_LIMIT_PER_IP: '0', // one load generator address
      LOCKSTOCK_RATE_LIMIT_PER_USER: '10',
    };
    const urls = ['--redis', redis.url, '--database', postgres.url];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      processes.push(spawnCli(['serve', '--port', String(port), '--workers', '0', ...urls], env));
      servers.push(`http://127.0.0.1:${port}`);
      await waitUntilHealthy(`${servers[i]}/healthz`); // one at a time: they migrate the same database
    }
    for (let i = 0; i < 2; i++) processes.push(spawnCli(['worker', ...urls], env));
  }, 120_000);

  afterAll(async () => {
    for (const p of processes) p.kill('SIGTERM');
    await Promise.all(processes.map((p) => p.exited));
    await db.end();
    await Promise.all([redis.stop(), postgres.stop()]);
  });

  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

  function post(
    url: string,
    token: string,
    body: string,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': body.length,
          },
        },
        (res) => {
          let data = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (data += chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) as Record<string, unknown> }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  describe(title, () => {
    it(`${setup.buyers} buyers and ${setup.repeats} repeats compete for ${setup.sales} × ${setup.stock} units: exactly the stock`, async () => {
      const { buyers: BUYERS, repeats: REPEATS, stock: STOCK } = setup;
      const admin = signToken(SECRET, 'admin', { admin: true });
      const saleIds: string[] = [];
      for (let i = 0; i < setup.sales; i++) {
        const created = await post(
          `${servers[0]}/api/sales`,
          admin,
          JSON.stringify({ name: `e2e ${i}`, stock: STOCK }),
        );
        expect(created.status).toBe(201);
        saleIds.push(String(created.body.id));
      }
      const attempts = Array.from({ length: BUYERS + REPEATS }, (_, i) => `buyer${i % BUYERS}`);
      const tokens = new Map<string, string>();
      const results: Array<{ user: string; saleId: string; status: number; body: Record<string, unknown> }> =
        [];
      let next = 0;
      // Start every lane before awaiting any; lanes spread requests over the three servers.
      const lanes = Array.from({ length: CONCURRENCY }, async (_, lane) => {
        for (let i = next++; i < attempts.length; i = next++) {
          const user = attempts[i] as string;
          let token = tokens.get(user);
          if (!token) tokens.set(user, (token = signToken(SECRET, user)));
          const server = servers[(i + lane) % servers.length] as string;
          const saleId = saleIds[i % saleIds.length] as string;
          const response = await post(`${server}/api/sales/${saleId}/orders`, token, '{"quantity":1}');
          results.push({ user, saleId, ...response });
        }
      });
      await Promise.all(lanes);
      const refusals = new Set(
        results.filter((r) => r.status !== 202).map((r) => `${r.status} ${r.body.error}`),
      );
      expect([...refusals].every((r) => r === '409 sold_out' || r === '409 limit_reached')).toBe(true);
      expect(results.filter((r) => r.status !== 202).every((r) => r.body.orderId === undefined)).toBe(true);

      for (const saleId of saleIds) {
        const accepted = results.filter((r) => r.status === 202 && r.saleId === saleId);
        expect(accepted).toHaveLength(STOCK);

        // Wait (observing the record) until the workers have written every accepted order.
        for (;;) {
          const { rows } = await db.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM orders WHERE sale_id = $1',
            [saleId],
          );
          if ((rows[0]?.n ?? 0) >= STOCK) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const { rows: orders } = await db.query<{
          id: string;
          user_id: string;
          status: string;
          quantity: number;
        }>('SELECT id::text AS id, user_id, status, quantity FROM orders WHERE sale_id = $1', [saleId]);
        expect(orders).toHaveLength(STOCK);
        expect(orders.every((o) => o.status === 'confirmed' && o.quantity === 1)).toBe(true);
        expect(new Set(orders.map((o) => o.user_id)).size).toBe(STOCK); // nobody over the limit of 1
        expect(new Set(orders.map((o) => o.id))).toEqual(
          new Set(accepted.map((r) => String(r.body.orderId))),
        );
        const { rows: sale } = await db.query<{ sold: number }>('SELECT sold FROM sales WHERE id = $1', [
          saleId,
        ]);
        expect(sale[0]?.sold).toBe(STOCK);

        const view = await fetch(`${servers[1]}/api/sales/${saleId}`).then((r) => r.json());
        expect(view).toMatchObject({ remaining: 0, sold: STOCK, status: 'sold_out' });
      }
    }, 600_000);
  });
}
