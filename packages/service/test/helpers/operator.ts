import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort, PostgresServer, PrometheusServer, RedisServer } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy, type CliProcess } from './cli.js';
import { signToken } from '../../src/http/auth.js';

/**
 * What an operator runs (issue 47), for test/observability/: `serve` processes (`--workers 0`) and a
 * separate `lockstock worker --metrics-port` on one Redis and one PostgreSQL, scraped by real
 * Prometheus servers loaded with the shipped rules (docs/observability/alerts.yml), one per scrape
 * interval asked for. Shared by operator.test.ts (the quick rows) and incidents.test.ts (the long
 * ones, the long tier, `npm run test:long`).
 */
export const SECRET = 'operator-secret-0123456789abcdef';
const docs = fileURLToPath(new URL('../../../../docs/observability/', import.meta.url));
export const shippedRules = () => readFileSync(`${docs}alerts.yml`, 'utf8');
export const shippedDashboard = () =>
  JSON.parse(readFileSync(`${docs}grafana-dashboard.json`, 'utf8')) as {
    panels: Array<{ title: string; targets?: Array<{ expr: string; legendFormat?: string }> }>;
  };

export interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
}

/** A Prometheus of the rig: its scrape interval, and the questions the tests ask it. */
export class Watcher {
  constructor(
    readonly prometheus: PrometheusServer,
    /** Scrape and evaluation interval, s. */
    readonly intervalS: number,
  ) {}

  async alerts(): Promise<Alert[]> {
    return (await this.prometheus.api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts;
  }

  async firing(name: string): Promise<Alert[]> {
    return (await this.alerts()).filter((a) => a.labels.alertname === name && a.state === 'firing');
  }

  async value(expr: string): Promise<number | undefined> {
    const result = await this.prometheus.query(expr);
    return result[0] === undefined ? undefined : Number(result[0].value[1]);
  }

  /**
   * When `alert` was firing from and until, by Prometheus's own clock (its rule evaluations write
   * ALERTS with a stale marker when the alert resolves): the first and last second of [fromMs, now]
   * at which a series of it was firing, one entry per label set. Independent of how quickly the test
   * polls.
   */
  async firingSpans(
    alert: string,
    fromMs: number,
  ): Promise<Array<{ labels: Record<string, string>; from: number; to: number }>> {
    const query = new URLSearchParams({
      query: `ALERTS{alertname="${alert}", alertstate="firing"}`,
      start: String(Math.floor(fromMs / 1000)),
      end: String(Math.ceil(Date.now() / 1000)),
      step: '1',
    });
    const data = await this.prometheus.api<{
      result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }>;
    }>(`/api/v1/query_range?${query}`);
    return data.result.map(({ metric, values }) => ({
      labels: metric,
      from: values[0]![0] * 1000,
      to: values.at(-1)![0] * 1000,
    }));
  }
}

export interface RigOptions {
  /** One `serve` per entry, with its --processes. */
  serves: number[];
  /** One Prometheus per entry: its scrape and evaluation interval, s. */
  intervals: number[];
}

export class OperatorRig {
  private constructor(
    readonly redis: RedisServer,
    readonly postgres: PostgresServer,
    readonly serves: CliProcess[],
    readonly urls: string[],
    readonly worker: CliProcess,
    readonly watchers: Watcher[],
  ) {}

  static async start(options: RigOptions): Promise<OperatorRig> {
    const [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
    const ports = await Promise.all(options.serves.map(() => freePort()));
    const metricsPort = await freePort();
    const urls = ports.map((port) => `http://127.0.0.1:${port}`);
    // No per-address limit: every buyer of these tests comes from 127.0.0.1, and a test's retries
    // would be answered 429 for what it is checking (the operator's view, not the rate limits).
    const env = {
      LOCKSTOCK_JWT_SECRET: SECRET,
      LOCKSTOCK_PROCESSES: undefined,
      LOG_LEVEL: 'info',
      LOCKSTOCK_RATE_LIMIT_PER_IP: '0',
    };
    const stores = ['--redis', redis.url, '--database', postgres.url];
    const serves = ports.map((port, i) =>
      spawnCli(
        [
          'serve',
          '--port',
          String(port),
          '--processes',
          String(options.serves[i]),
          '--workers',
          '0',
          ...stores,
        ],
        env,
      ),
    );
    await Promise.all(urls.map((url) => waitUntilHealthy(`${url}/healthz`)));
    const worker = spawnCli(['worker', ...stores, '--metrics-port', String(metricsPort)], env);
    const config = (interval: number) =>
      [
        `global: { scrape_interval: ${interval}s, evaluation_interval: ${interval}s }`,
        'rule_files: [alerts.yml]',
        'scrape_configs:',
        '  - job_name: lockstock',
        `    static_configs: [{ targets: [${ports.map((port) => `'127.0.0.1:${port}'`).join(', ')}] }]`,
        '  - job_name: lockstock-worker',
        `    static_configs: [{ targets: ['127.0.0.1:${metricsPort}'] }]`,
        '',
      ].join('\n');
    const [prometheuses] = await Promise.all([
      Promise.all(
        options.intervals.map((interval) =>
          PrometheusServer.start({ config: config(interval), files: { 'alerts.yml': shippedRules() } }),
        ),
      ),
      waitUntilHealthy(`http://127.0.0.1:${metricsPort}/healthz`),
    ]);
    const watchers = prometheuses.map((prometheus, i) => new Watcher(prometheus, options.intervals[i]!));
    return new OperatorRig(redis, postgres, serves, urls, worker, watchers);
  }

  async stop(): Promise<void> {
    this.worker.kill('SIGCONT');
    for (const process of [...this.serves, this.worker]) process.kill();
    await Promise.all([...this.serves, this.worker].map((p) => p.exited));
    await Promise.all([
      ...this.watchers.map((w) => w.prometheus.stop()),
      this.redis.stop(),
      this.postgres.stop(),
    ]);
  }

  async createSale(name: string, stock: number): Promise<string> {
    const created = await fetch(`${this.urls[0]}/api/sales`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${signToken(SECRET, 'admin', { admin: true })}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ name, stock, perUserLimit: 1 }),
    });
    return ((await created.json()) as { id: string }).id;
  }

  /** A purchase's HTTP status (0: no answer within 10 s). */
  buy(url: string, saleId: string, user: string): Promise<number> {
    return fetch(`${url}/api/sales/${saleId}/orders`, {
      method: 'POST',
      headers: { authorization: `Bearer ${signToken(SECRET, user)}`, 'content-type': 'application/json' },
      body: '{}',
      signal: AbortSignal.timeout(10_000),
    }).then(
      (response) => response.status,
      () => 0,
    );
  }

  /**
   * Buyers that keep trying, four at a time, each as soon as it has its answer, until stop() (which
   * resolves with every status answered, in order of arrival).
   */
  buyers(saleId: string, tag: string): { stop(): Promise<number[]> } {
    let buying = true;
    const statuses: number[] = [];
    const all = Promise.all(
      [0, 1, 2, 3].map(async (buyer) => {
        for (let i = 0; buying; i++)
          statuses.push(await this.buy(this.urls[buyer % this.urls.length]!, saleId, `${tag}-${buyer}-${i}`));
      }),
    );
    return {
      async stop() {
        buying = false;
        await all;
        return statuses;
      },
    };
  }
}

/**
 * How long after its cause each alert fires, and after the cause ends it resolves, at a scrape (and
 * evaluation) interval of S seconds, s: the windows docs/runbook.md documents. Each is the alert's
 * `for` (and threshold), two intervals (the scrape that sees it, the evaluation that reads it) and
 * what the process takes to notice (its 1 s background readings with their 1 s timeout, a
 * reconnection, a pipeline retry).
 */
export const ALERT_WINDOWS = {
  LockstockRedisDown: { fires: (S: number) => 15 + 2 * S + 5, resolves: (S: number) => 2 * S + 10 },
  // Over half the purchases of the last minute refused, for 30 s; resolves once the minute has passed.
  LockstockPurchasesRefused: {
    fires: (S: number) => 30 + 3 * S + 5,
    resolves: (S: number) => 60 + 2 * S + 5,
  },
  LockstockDatabaseDown: { fires: (S: number) => 60 + 2 * S + 5, resolves: (S: number) => 2 * S + 10 },
  LockstockWorkerFailing: { fires: (S: number) => 60 + 2 * S + 10, resolves: (S: number) => 2 * S + 15 },
  LockstockDeadLetters: { fires: (S: number) => 60 + 2 * S + 5, resolves: (S: number) => 2 * S + 5 },
} as const;
