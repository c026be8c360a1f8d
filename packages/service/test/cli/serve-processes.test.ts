import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@lockstock/servers';
import { signToken } from '../../src/http/auth.js';
import { decodeSnowflake } from '../../src/sale/ids/snowflake.js';
import { spawnCli, type CliProcess } from '../helpers/cli.js';
import { until } from '../helpers/until.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The live processes whose parent is `pid` (a serve primary's HTTP processes and its redis-server). */
function childrenOf(pid: number): Array<{ pid: number; command: string }> {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid !== pid) return [];
        return [{ pid: Number(entry), command: readFileSync(`/proc/${entry}/cmdline`, 'utf8') }];
      } catch {
        return []; // exited meanwhile
      }
    });
}

const httpProcessesOf = (pid: number) =>
  childrenOf(pid)
    .filter((child) => child.command.includes('main.js'))
    .map((child) => child.pid);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Answer {
  status: number;
  body: { orderId?: string; error?: string; status?: string };
}

async function buy(address: string, saleId: string, token: string): Promise<Answer> {
  const response = await fetch(`${address}/api/sales/${saleId}/orders`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"quantity":1}',
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** One request on a connection of its own (no pooling): the primary deals connections round robin. */
function alone(
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: object,
): Promise<{ status: number; body: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { method, agent: false, headers: { ...headers, connection: 'close' } });
    sent.on('error', reject);
    sent.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
    });
    if (body) sent.setHeader('content-type', 'application/json');
    sent.end(body ? JSON.stringify(body) : undefined);
  });
}

describe('serve --processes 2 (embedded Redis and record: the default on a 2-core machine)', () => {
  it('two HTTP processes sell one stock exactly, the primary records it; a killed one is replaced; all stop together', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'lockstock-processes-'));
    dirs.push(cwd);
    const port = await freePort();
    const serve: CliProcess = spawnCli(
      ['serve', '--processes', '2', '--durability', 'memory'],
      { PORT: String(port), LOCKSTOCK_RATE_LIMIT_PER_IP: '0', LOCKSTOCK_RATE_LIMIT_PER_USER: '0' },
      { cwd },
    );
    const primary = serve.child.pid as number;
    try {
      const admin = (await serve.waitForLine(/^Admin token/)).split(': ')[1]?.trim() as string;
      const address = `http://127.0.0.1:${port}`;
      const before = httpProcessesOf(primary);
      expect(before).toHaveLength(2);
      const secret = readFileSync(join(cwd, '.lockstock', 'jwt-secret'), 'utf8').trim();

      const createSale = async (stock: number, more: object = {}): Promise<string> => {
        const response = await fetch(`${address}/api/sales`, {
          method: 'POST',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `stock ${stock}`, stock, ...more }),
        });
        expect(response.status).toBe(201);
        return ((await response.json()) as { id: string }).id;
      };
      const rush = async (saleId: string, buyers: number) => {
        // Every buyer starts before any answer is awaited, on connections of their own.
        const pending = Array.from({ length: buyers }, (_, i) =>
          buy(address, saleId, signToken(secret, `buyer-${saleId}-${i}`)),
        );
        return Promise.all(pending);
      };

      const first = await createSale(150);
      const answers = await rush(first, 400);
      const reserved = answers.filter((a) => a.status === 202);
      expect(reserved).toHaveLength(150);
      expect(answers.filter((a) => a.status !== 202).map((a) => a.body.error)).toEqual(
        Array.from({ length: 250 }, () => 'sold_out'),
      );
      // Each HTTP process leases an order-id worker of its own: the ids say both sold.
      const sellers = new Set(reserved.map((a) => decodeSnowflake(a.body.orderId as string).workerId));
      expect(sellers.size).toBe(2);

      // GET /metrics, whichever process answers it, sums the whole service (each sold only part).
      const metrics = await (await fetch(`${address}/metrics`)).text();
      expect(metrics).toMatch(/^lockstock_reservations_total\{outcome="reserved"\} 150$/m);
      expect(metrics).toMatch(/^lockstock_reservations_total\{outcome="sold_out"\} 250$/m);

      // One HTTP process killed: the primary replaces it, and the service sells on.
      process.kill(before[0] as number, 'SIGKILL');
      await serve.waitForLine(/an HTTP process died; starting another/);
      await until(
        'a replacement HTTP process',
        async () => {
          const now = httpProcessesOf(primary);
          return now.length === 2 && !now.includes(before[0] as number);
        },
        30_000,
      );
      await until('a healthy service', async () => (await fetch(`${address}/healthz`)).ok, 30_000);
      const second = await createSale(40);
      const again = await rush(second, 100);
      expect(again.filter((a) => a.status === 202)).toHaveLength(40);
      expect(again.every((a) => a.status === 202 || a.body.error === 'sold_out')).toBe(true);

      // Both (the replacement too) sign admissions with the service's one key, from the record: an
      // admission one process signed sells on the other. Every request on a connection of its
      // own, so the processes take turns; 20 buyers each ask, are admitted and buy.
      const roomSale = await createSale(20, {
        room: { ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1 },
      });
      const admittedBuyers = Array.from({ length: 20 }, async (_, i) => {
        const auth = { authorization: `Bearer ${signToken(secret, `room-buyer-${i}`)}` };
        const room = `${address}/api/sales/${roomSale}/room`;
        let standing = (await alone('POST', `${room}/tickets`, auth)).body;
        for (let asks = 0; standing.state !== 'admitted'; asks++) {
          expect(asks, JSON.stringify(standing)).toBeLessThan(500);
          await sleep(20); // how often a client asks: not synchronisation
          standing = (await alone('POST', `${room}/check`, auth, { ticket: standing.ticket })).body;
        }
        const admission = String(standing.admission);
        return alone('POST', `${address}/api/sales/${roomSale}/orders`, { ...auth, admission });
      });
      expect((await Promise.all(admittedBuyers)).map((a) => a.status)).toEqual(
        Array.from({ length: 20 }, () => 202),
      );
      const keySets = await Promise.all(
        Array.from({ length: 4 }, () => alone('GET', `${address}/.well-known/jwks.json`, {})),
      );
      const raffleKey = (await alone('GET', `${address}/.well-known/lockstock/raffle-key`, {})).body;
      for (const keys of keySets) {
        expect(keys.body).toEqual({ keys: [expect.objectContaining({ x: raffleKey.publicKey })] });
      }

      // The primary's pipeline records what the HTTP processes sold (its /healthz, from any of them).
      await until(
        'every order recorded',
        async () => {
          const health = (await (await fetch(`${address}/healthz`)).json()) as {
            backlog: { oldestUnrecordedMs: number | null };
          };
          return health.backlog.oldestUnrecordedMs === null;
        },
        30_000,
      );
      const children = childrenOf(primary).map((child) => child.pid);

      serve.kill('SIGTERM');
      const [code] = (await serve.exited) as [number | null];
      // Exit 1 means something did not close, or not within its time: its output says what.
      expect(code, serve.output()).toBe(0);
      // Nothing of it is left: HTTP processes, order thread, redis-server.
      expect(children.filter(alive)).toEqual([]);

      // What was recorded, read from the embedded store it left: every acknowledged order, once.
      const db = new PGlite(join(cwd, '.lockstock', 'pgdata'));
      try {
        const rows = await db.query<{ sale_id: string; id: string; user_id: string }>(
          `SELECT sale_id::text, id::text, user_id FROM orders WHERE status = 'confirmed'`,
        );
        const recorded = (saleId: string) => rows.rows.filter((row) => row.sale_id === saleId);
        expect(new Set(recorded(first).map((row) => row.id))).toEqual(
          new Set(reserved.map((a) => a.body.orderId)),
        );
        expect(recorded(second)).toHaveLength(40);
        expect(new Set(rows.rows.map((row) => `${row.sale_id}/${row.user_id}`)).size).toBe(rows.rows.length);
      } finally {
        await db.close();
      }
    } finally {
      if (alive(primary)) serve.kill('SIGKILL');
    }
    // The data directory is free again: its claim went with the primary.
    expect(existsSync(join(cwd, '.lockstock', 'owner.json'))).toBe(false);
  });
});
