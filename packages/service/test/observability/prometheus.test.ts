import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PostgresServer, PrometheusServer, promtool, RedisServer } from '@lockstock/servers';
import { spawnCli, waitUntilHealthy, type CliProcess } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { signToken } from '../../src/http/auth.js';

/**
 * What operators import, against the real parts: a Prometheus of its own (1 s scrapes, the alert rules
 * loaded) scraping a running `serve --processes 2` (the built CLI, an OS process) through a small
 * sale. The rules pass `promtool check rules` and their unit tests; every query of every panel of the
 * Grafana dashboard returns series for the sale; the per-sale gauges agree with what was sold (read
 * once, not once per process); and with Redis stopped the scrape still succeeds, reporting Redis down.
 */
const SECRET = 'observability-secret-0123456789';
const docs = fileURLToPath(new URL('../../../../docs/observability/', import.meta.url));
const JOB = 'lockstock';

let redis: RedisServer;
let postgres: PostgresServer;
let serve: CliProcess;
let prometheus: PrometheusServer;
let url: string;

beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  serve = spawnCli(
    ['serve', '--port', String(port), '--processes', '2', '--redis', redis.url, '--database', postgres.url],
    { LOCKSTOCK_JWT_SECRET: SECRET, LOCKSTOCK_PROCESSES: undefined },
  );
  [prometheus] = await Promise.all([
    PrometheusServer.start({
      config: [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'rule_files: [alerts.yml]',
        'scrape_configs:',
        `  - job_name: ${JOB}`,
        `    static_configs: [{ targets: ['127.0.0.1:${port}'] }]`,
        '',
      ].join('\n'),
      files: { 'alerts.yml': readFileSync(`${docs}alerts.yml`, 'utf8') },
    }),
    waitUntilHealthy(`${url}/healthz`),
  ]);
}, 120_000);

afterAll(async () => {
  serve?.kill();
  await serve?.exited;
  await Promise.all([prometheus?.stop(), redis?.stop(), postgres?.stop()]);
});

const post = (path: string, token: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** The one value of an instant query's answer (undefined when there is no series). */
async function value(expr: string): Promise<number | undefined> {
  const result = await prometheus.query(expr);
  return result[0] === undefined ? undefined : Number(result[0].value[1]);
}

interface Panel {
  type: string;
  title: string;
  targets?: Array<{ expr: string }>;
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Array<{ name: string; definition: string }> };
}

describe('Prometheus scraping serve, with the rules and the dashboard operators import', () => {
  it('accepts the alert rules (promtool check rules, promtool test rules)', async () => {
    const checked = await promtool(['check', 'rules', 'alerts.yml'], { cwd: docs });
    expect(checked.output).toMatch(/SUCCESS: 13 rules found/);
    expect(checked.code).toBe(0);
    const tested = await promtool(['test', 'rules', 'alerts.test.yml'], { cwd: docs });
    expect(tested.output).toMatch(/SUCCESS/);
    expect(tested.code).toBe(0);
  });

  it('answers every panel of the dashboard after a sale, with per-sale gauges that match it', async () => {
    await until('Prometheus scraped serve', async () => (await value(`up{job="${JOB}"}`)) === 1, 30_000);
    const admin = signToken(SECRET, 'admin', { admin: true });
    const created = await post('/api/sales', admin, { name: 'observed', stock: 10, perUserLimit: 1 });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    // Six buyers buy one unit each; one of them tries a second time (refused: limit_reached). In two
    // waves, a scrape apart: the purchase route's histogram is born with the first purchase, and a
    // rate (the latency panel's) needs a sample before the second wave.
    const statuses: number[] = [];
    const buy = async (user: string) =>
      statuses.push((await post(`/api/sales/${id}/orders`, signToken(SECRET, user), {})).status);
    for (const user of ['b1', 'b2', 'b3']) await buy(user);
    await until(
      'Prometheus saw the purchase route',
      async () =>
        (await prometheus.query(`lockstock_http_request_seconds_count{route="/api/sales/:id/orders"}`))
          .length > 0,
      30_000,
    );
    for (const user of ['b4', 'b5', 'b6', 'b1']) await buy(user);
    expect(statuses).toEqual([202, 202, 202, 202, 202, 202, 409]);

    // What Prometheus stored: the record caught up, each figure counted once across the processes.
    const sale = `job="${JOB}", sale="${id}"`;
    await until(
      'Prometheus saw the orders recorded',
      async () => (await value(`lockstock_sale_units_recorded{${sale}}`)) === 6,
      30_000,
    );
    expect(await value(`lockstock_sale_units_left{${sale}}`)).toBe(4);
    expect(await value(`lockstock_sale_units_reserved{${sale}}`)).toBe(6);
    await until(
      'the backlog scraped empty',
      async () => (await value(`lockstock_sale_unrecorded_entries{${sale}}`)) === 0,
      30_000,
    );
    expect(await value(`lockstock_sale_oldest_unrecorded_seconds{${sale}}`)).toBe(0);
    expect(await value(`lockstock_dependency_up{job="${JOB}", dependency="database"}`)).toBe(1);
    // Enough 1 s scrapes after the purchases for a rate over the window to see them.
    await until(
      'a rate of purchases',
      async () =>
        ((await value(`sum(rate(lockstock_reservations_total{job="${JOB}", outcome="reserved"}[1m]))`)) ??
          0) > 0,
      30_000,
    );

    const dashboard = JSON.parse(readFileSync(`${docs}grafana-dashboard.json`, 'utf8')) as Dashboard;
    const substitute = (expr: string) =>
      expr
        .replaceAll('$job', JOB)
        .replaceAll('$sale', id)
        .replaceAll('$__rate_interval', '1m')
        .replaceAll('$__range', '5m')
        .replaceAll('$__interval', '15s');
    const queries = dashboard.panels.flatMap((panel) =>
      (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: substitute(target.expr) })),
    );
    expect(queries.length).toBeGreaterThanOrEqual(15);
    const empty: string[] = [];
    for (const { panel, expr } of queries) {
      const result = await prometheus.query(expr);
      // Series, and a number among them (a quantile of no requests is NaN: an empty panel).
      if (!result.some((series) => Number.isFinite(Number(series.value[1])))) empty.push(`${panel}: ${expr}`);
      // A per-sale panel shows this sale and no other.
      if (expr.includes('sale=~')) expect(result.every((s) => s.metric.sale === id)).toBe(true);
    }
    expect(empty).toEqual([]);

    // The variables: label_values(metric, label) as Grafana asks it (/api/v1/label/<label>/values).
    for (const variable of dashboard.templating.list) {
      const [, metric, label] = /^label_values\((.+), (\w+)\)$/.exec(variable.definition) ?? [];
      expect(metric, variable.name).toBeDefined();
      const values = await prometheus.api<string[]>(
        `/api/v1/label/${label}/values?match[]=${encodeURIComponent(substitute(metric as string))}`,
      );
      expect(values).toContain(variable.name === 'job' ? JOB : id);
    }

    // The rules loaded and evaluate without errors; on a healthy service none is pending or firing.
    const { groups } = await prometheus.api<{
      groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }>;
    }>('/api/v1/rules');
    const rules = groups.flatMap((group) => group.rules);
    expect(rules).toHaveLength(13);
    await until('every rule evaluated', async () => {
      const data = await prometheus.api<{ groups: Array<{ rules: Array<{ health: string }> }> }>(
        '/api/v1/rules',
      );
      return data.groups.flatMap((g) => g.rules).every((rule) => rule.health === 'ok');
    });
    expect((await prometheus.api<{ alerts: unknown[] }>('/api/v1/alerts')).alerts).toEqual([]);
  });

  it('keeps scraping with Redis down: the target stays up, Redis reported down, LockstockRedisDown pending', async () => {
    await redis.stop();
    await until(
      'a scrape with Redis down',
      async () => (await value(`lockstock_dependency_up{job="${JOB}", dependency="redis"}`)) === 0,
      30_000,
    );
    expect(await value(`up{job="${JOB}"}`)).toBe(1);
    expect(await value(`lockstock_sale_metrics_up{job="${JOB}"}`)).toBe(0);
    expect(await value(`count(lockstock_sale_units_left{job="${JOB}"})`)).toBeUndefined();
    await until('the alert is pending', async () => {
      const { alerts } = await prometheus.api<{
        alerts: Array<{ labels: { alertname: string }; state: string }>;
      }>('/api/v1/alerts');
      return alerts.some((alert) => alert.labels.alertname === 'LockstockRedisDown');
    });
  });
});
