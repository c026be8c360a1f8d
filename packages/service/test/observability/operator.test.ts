import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PostgresServer, PrometheusServer, RedisServer } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy, type CliProcess } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { signToken } from '../../src/http/auth.js';

/**
 * What an operator runs, found from outside (issue 47): two `serve` processes (`--workers 0`) and a
 * separate `lockstock worker --metrics-port` on one Redis and one PostgreSQL, scraped every second by
 * a real Prometheus loaded with the shipped rules. The worker is scraped and names itself; frozen
 * (SIGSTOP) it fires LockstockWorkerDown, which resolves after SIGCONT; Redis killed, the serves keep
 * answering their scrapes, LockstockRedisDown and LockstockPurchasesRefused fire, and each serve logs
 * the outage in a bounded number of lines, however many purchases it refused.
 */
const SECRET = 'operator-secret-0123456789abcdef';
const docs = fileURLToPath(new URL('../../../../docs/observability/', import.meta.url));

let redis: RedisServer;
let postgres: PostgresServer;
let serves: CliProcess[] = [];
let worker: CliProcess;
let prometheus: PrometheusServer;
let urls: string[];

interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}
const alerts = async () => (await prometheus.api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts;
const firing = async (name: string) =>
  (await alerts()).filter((a) => a.labels.alertname === name && a.state === 'firing');
async function value(expr: string): Promise<number | undefined> {
  const result = await prometheus.query(expr);
  return result[0] === undefined ? undefined : Number(result[0].value[1]);
}

beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  const ports = await Promise.all([freePort(), freePort(), freePort()]);
  const [a, b, metricsPort] = ports as [number, number, number];
  urls = [a, b].map((port) => `http://127.0.0.1:${port}`);
  const env = { LOCKSTOCK_JWT_SECRET: SECRET, LOCKSTOCK_PROCESSES: undefined, LOG_LEVEL: 'info' };
  const stores = ['--redis', redis.url, '--database', postgres.url];
  serves = [a, b].map((port) =>
    spawnCli(['serve', '--port', String(port), '--processes', '1', '--workers', '0', ...stores], env),
  );
  await Promise.all(urls.map((url) => waitUntilHealthy(`${url}/healthz`)));
  worker = spawnCli(['worker', ...stores, '--metrics-port', String(metricsPort)], env);
  [prometheus] = await Promise.all([
    PrometheusServer.start({
      config: [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'rule_files: [alerts.yml]',
        'scrape_configs:',
        '  - job_name: lockstock',
        `    static_configs: [{ targets: ['127.0.0.1:${a}', '127.0.0.1:${b}'] }]`,
        '  - job_name: lockstock-worker',
        `    static_configs: [{ targets: ['127.0.0.1:${metricsPort}'] }]`,
        '',
      ].join('\n'),
      files: { 'alerts.yml': readFileSync(`${docs}alerts.yml`, 'utf8') },
    }),
    waitUntilHealthy(`http://127.0.0.1:${metricsPort}/healthz`),
  ]);
}, 120_000);

afterAll(async () => {
  worker?.kill('SIGCONT');
  for (const process of [...serves, worker]) process?.kill();
  await Promise.all([...serves, worker].map((p) => p?.exited));
  await Promise.all([prometheus?.stop(), redis?.stop(), postgres?.stop()]);
});

const buy = (url: string, saleId: string, user: string) =>
  fetch(`${url}/api/sales/${saleId}/orders`, {
    method: 'POST',
    headers: { authorization: `Bearer ${signToken(SECRET, user)}`, 'content-type': 'application/json' },
    body: '{}',
    signal: AbortSignal.timeout(10_000),
  }).then(
    (response) => response.status,
    () => 0,
  );

describe('an operator watching two serves and a worker through Prometheus and the shipped rules', () => {
  let saleId: string;

  it('scrapes the worker: it names itself, and the orders it records are counted', async () => {
    const created = await fetch(`${urls[0]}/api/sales`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name: 'watched', stock: 100, perUserLimit: 1 }),
    });
    saleId = ((await created.json()) as { id: string }).id;
    const statuses = await Promise.all(
      ['w1', 'w2', 'w3', 'w4', 'w5', 'w6'].map((user, i) => buy(urls[i % 2]!, saleId, user)),
    );
    expect(statuses).toEqual([202, 202, 202, 202, 202, 202]);
    await until(
      'Prometheus counted the orders the worker recorded',
      async () =>
        (await value('sum(lockstock_orders_recorded_total{job="lockstock-worker", status="confirmed"})')) ===
        6,
      60_000,
    );
    expect(
      await value(
        'lockstock_process_info{job="lockstock-worker", role="worker", service_name="lockstock-worker"}',
      ),
    ).toBe(1);
    await until(
      'both serves scraped, each naming itself',
      async () => (await value('count(lockstock_process_info{job="lockstock", role="serve"})')) === 2,
      30_000,
    );
    expect(await value('lockstock_pipeline_consumers{job="lockstock-worker"}')).toBe(1);
    // Each serve reports the sale; the rules' max() by sale reads it once.
    expect(await value(`count(lockstock_sale_units_left{sale="${saleId}"})`)).toBe(2);
    expect(await value(`max by (sale) (lockstock_sale_units_left{sale="${saleId}"})`)).toBe(94);
  }, 90_000);

  it('fires LockstockWorkerDown for a frozen worker (SIGSTOP) and resolves it after SIGCONT', async () => {
    worker.kill('SIGSTOP');
    try {
      await until(
        'LockstockWorkerDown fires',
        async () => (await firing('LockstockWorkerDown')).length === 1,
        120_000,
      );
      const [alert] = await firing('LockstockWorkerDown');
      expect(alert?.labels.job).toBe('lockstock-worker');
      // The serves are not taken for workers.
      expect((await alerts()).filter((a) => a.labels.alertname === 'LockstockWorkerDown')).toHaveLength(1);
    } finally {
      worker.kill('SIGCONT');
    }
    await until(
      'LockstockWorkerDown resolves',
      async () => (await alerts()).every((a) => a.labels.alertname !== 'LockstockWorkerDown'),
      60_000,
    );
  }, 200_000);

  it('keeps scraping through a Redis outage: LockstockRedisDown and LockstockPurchasesRefused fire, the logs stay short', async () => {
    const before = serves.map((serve) => serve.allLines().length);
    await redis.kill();
    // Buyers keep trying through the outage (they are answered 503): four at a time, each retrying
    // as soon as it has its answer.
    let buying = true;
    let refused = 0;
    const buyers = Promise.all(
      [0, 1, 2, 3].map(async (buyer) => {
        for (let i = 0; buying; i++) {
          if ((await buy(urls[buyer % 2]!, saleId, `outage-${buyer}-${i}`)) === 503) refused++;
        }
      }),
    );
    try {
      await until(
        'LockstockRedisDown fires for both serves',
        async () => (await firing('LockstockRedisDown')).length === 2,
        120_000,
      );
      await until(
        'LockstockPurchasesRefused fires',
        async () => (await firing('LockstockPurchasesRefused')).length === 1,
        120_000,
      );
      // Every 1 s scrape of the serves answered through the outage (no scrape timed out).
      expect(await value('min(min_over_time(up{job="lockstock"}[45s]))')).toBe(1);
    } finally {
      buying = false;
      await buyers;
    }
    expect(refused).toBeGreaterThan(24); // more than the lines allowed below
    await redis.restart();
    const backs = await Promise.all(serves.map((serve) => serve.waitForLine(/"msg":"redis is back"/)));
    // One line when Redis went, one when it came back, and what the outage otherwise says (a sale
    // rebuilt, the database probe): a handful, not one per refused purchase or reconnection attempt.
    for (const [i, serve] of serves.entries()) {
      const lines = serve.allLines().slice(before[i]);
      const down = lines.filter((line) => line.includes('"msg":"redis unavailable'));
      expect(down, lines.join('\n')).toHaveLength(1);
      expect(lines, serve.allLines().join('\n')).toContain(backs[i]);
      const back = JSON.parse(backs[i]!) as { refused: number; downForMs: number };
      expect(back.refused).toBeGreaterThan(0);
      expect(lines.length, lines.join('\n')).toBeLessThanOrEqual(12);
      expect(
        lines.filter((line) => line.includes('"stack"')),
        'no stack trace',
      ).toEqual([]);
    }
  }, 300_000);
});
