import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { Resources } from '../../src/cli/lifecycle.js';
import { startRuntime, type Runtime } from '../../src/cli/runtime.js';
import { dashboardCounters } from '../../src/cli/serve-common.js';
import { saleKeys } from '../../src/sale/keys.js';
import { PostgresServer, RedisServer } from '@lockstock/servers';

/**
 * The sale when its dependencies fail, in one process assembled as `serve` assembles it (startRuntime:
 * the same Redis and pool settings, a pipeline in-process), with the faults injected for real:
 * redis-server SIGKILLed and restarted (AOF), paused with SIGSTOP; PostgreSQL stopped with
 * `pg_ctl stop -m immediate` and restarted.
 */
const SECRET = 'dependencies-secret-0123456789';
let redis: RedisServer;
let postgres: PostgresServer;
let runtime: Runtime;
let app: FastifyInstance;
/** The same service without rate limits: a purchase's only Redis command is the reservation script. */
let unlimited: FastifyInstance;
let saleId: string;
const resources = new Resources();
const logged: string[] = [];
const show = (line: string) => process.env.TEST_LOG_LEVEL && process.stdout.write(line);

const bearer = (user: string) => ({ authorization: `Bearer ${signToken(SECRET, user)}` });

beforeAll(async () => {
  [redis, postgres] = await Promise.all([
    RedisServer.start({ args: ['--appendonly', 'yes', '--appendfsync', 'everysec'] }),
    PostgresServer.start(),
  ]);
  runtime = await startRuntime(
    {
      redisUrl: redis.url,
      databaseUrl: postgres.url,
      pipelines: 1,
      redisCommandTimeoutMs: 1_500, // above the pipeline's 1 s blocking read
      // Every line kept (and shown with TEST_LOG_LEVEL), for what the outages may log.
      logger: pino(
        { level: 'info' },
        {
          write: (line: string) => {
            logged.push(line);
            show(line);
          },
        },
      ),
    },
    resources,
  );
  app = await buildApp({
    service: runtime.service,
    context: runtime.context,
    db: runtime.db,
    metrics: runtime.metrics,
    // Rate limits on: they are the first thing a request asks Redis.
    config: { jwtSecret: SECRET, rateLimitPerUser: 1_000, rateLimitPerIp: 1_000 },
    logger: runtime.logger,
    pipelines: () => runtime.pipelines.map((p) => p.health),
    dependencies: runtime.dependencies, // as serve: one outage log per process
  });
  resources.add('the app', () => app.close());
  unlimited = await buildApp({
    service: runtime.service,
    context: runtime.context,
    db: runtime.db,
    metrics: runtime.metrics,
    config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
    dependencies: runtime.dependencies,
  });
  resources.add('the app without rate limits', () => unlimited.close());
  saleId = (await runtime.service.createSale({ name: 'outage sale', stock: 100, perUserLimit: 2 })).id;
});

afterAll(async () => {
  redis.signal('SIGCONT');
  await resources.closeAll();
  await Promise.all([redis.stop(), postgres.stop()]);
});

const buy = (user: string, key?: string, through = app) =>
  through.inject({
    method: 'POST',
    url: `/api/sales/${saleId}/orders`,
    headers: { ...bearer(user), ...(key ? { 'idempotency-key': key } : {}) },
    payload: {},
  });

function expectUnavailable(response: LightMyRequestResponse): void {
  expect(response.statusCode).toBe(503);
  expect(response.headers['retry-after']).toBe('1');
  expect(response.json()).toMatchObject({ error: 'service_unavailable', message: expect.any(String) });
}

async function unavailableCount(dependency: string): Promise<number> {
  const metrics = await runtime.metrics.registry.getSingleMetricAsString('lockstock_http_unavailable_total');
  const match = new RegExp(`lockstock_http_unavailable_total\\{dependency="${dependency}"\\} (\\d+)`).exec(
    metrics,
  );
  return Number(match?.[1] ?? 0);
}

/** Polls until `check` passes (observable state, bounded by the test's timeout). */
async function eventually(check: () => Promise<void>): Promise<void> {
  for (;;) {
    try {
      return await check();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * What Redis holds for a buyer, whatever the client was told: units reserved (the sale's buyers hash)
 * and, for an Idempotency-Key, the order it made. (Not the stream: the pipeline trims recorded entries.)
 */
async function reservedUnits(user: string): Promise<number> {
  return Number((await runtime.redis.hget(saleKeys(saleId).buyers, user)) ?? 0);
}

async function orderMadeWith(user: string, key: string): Promise<string | undefined> {
  const record = await runtime.redis.get(saleKeys(saleId).idempotency(user, key));
  return record?.split(':')[0];
}

describe('Redis down', () => {
  it('answers 503 service_unavailable with Retry-After (never 500), counts it, and sells again when Redis is back', async () => {
    expect((await buy('before')).statusCode).toBe(202);
    const before = await unavailableCount('redis');
    await redis.kill();

    const purchase = await buy('during');
    expectUnavailable(purchase);
    expectUnavailable(await app.inject({ method: 'GET', url: `/api/sales/${saleId}` }));
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    expectUnavailable(health);
    expect(health.json()).toMatchObject({ status: 'down', redis: 'down', database: 'ok' });
    expect(await unavailableCount('redis')).toBeGreaterThanOrEqual(before + 2);

    await redis.restart();
    await eventually(async () => expect((await buy('after')).statusCode).toBe(202));
    // AOF: the reservation made before the crash is still there; the refused one never happened.
    expect(await reservedUnits('before')).toBe(1);
    expect(await reservedUnits('during')).toBe(0);
  });
});

describe('Redis staying down', () => {
  it('answers a purchase 503 at once while the connection is lost, not when the reconnection attempts give up', async () => {
    expect((await buy('before-long')).statusCode).toBe(202);
    // The next reconnection attempt a minute away, and no command timeout before it: a purchase
    // queued for the connection would wait that minute. The sale's recovery gate refuses it first
    // (the connection is not ready), before any command.
    const client = runtime.redis as Redis; // one server here, not a Cluster
    const { retryStrategy, commandTimeout } = client.options;
    client.options.retryStrategy = () => 60_000;
    client.options.commandTimeout = 120_000;
    try {
      await redis.kill();
      await eventually(async () => expect(client.status).toBe('reconnecting'));
      const answered = await Promise.race([
        Promise.all([buy('lost-1'), buy('lost-2', 'lost-key')]),
        new Promise<'waited'>((resolve) => setTimeout(resolve, 10_000, 'waited')),
      ]);
      expect(answered, 'the purchases waited for the connection').not.toBe('waited');
      for (const response of answered as LightMyRequestResponse[]) expectUnavailable(response);
    } finally {
      client.options.retryStrategy = retryStrategy;
      client.options.commandTimeout = commandTimeout;
    }
    await redis.restart();
    client.connect().catch(() => {}); // now, not in a minute
    await eventually(async () => expect((await buy('after-long')).statusCode).toBe(202));
    expect(await reservedUnits('lost-1')).toBe(0);
    expect(await reservedUnits('lost-2')).toBe(0);
  });
});

describe('the dashboard counters through an outage', () => {
  it("their writes Redis refuses are part of the outage's one line each way, and reach Redis once it is back", async () => {
    const counters = dashboardCounters(runtime); // as serve makes them
    const since = logged.length;
    await redis.kill();
    counters.attempt(saleId, 'reserved', 3);
    await counters.flush(); // refused: kept for the next one
    await counters.flush(); // refused again
    await redis.restart();
    await eventually(async () => expect((await buy('after-counters')).statusCode).toBe(202));
    await counters.flush();
    expect(Number(await runtime.redis.hget(saleKeys(saleId).outcomes, 'reserved'))).toBeGreaterThanOrEqual(3);
    // Nor the pipeline and the sweeper, which retried through the outage on their own.
    expectOneLineEachWay(logged.slice(since), 'redis');
    const lines = logged.slice(since).map((line) => JSON.parse(line) as { msg: string; failures?: number });
    expect(lines.find((l) => l.msg === 'redis is back')?.failures).toBeGreaterThanOrEqual(2);
  });
});

describe('an unknown outcome (Redis paused with SIGSTOP mid-request)', () => {
  it(
    'answers 503 when Redis does not answer in time; retrying with the same Idempotency-Key returns the order it made',
    { timeout: 20_000 },
    async () => {
      // Rate limits off here: with them, the limiter's own Redis call would be the one that times out.
      // The script must be in Redis's cache (a restart empties it): the NOSCRIPT reply of an uncached
      // EVALSHA would come after the timeout, and the EVAL fallback would never be sent.
      expect((await buy('warm-up', 'warm-up', unlimited)).statusCode).toBe(202);
      redis.signal('SIGSTOP');
      try {
        // The reservation script is written to the socket; Redis will run it when it wakes up.
        expectUnavailable(await buy('paused-503', 'checkout-1', unlimited));
      } finally {
        redis.signal('SIGCONT');
      }
      // Redis ran the script when it woke up: the order exists, though the client was told 503.
      await eventually(async () => expect(await orderMadeWith('paused-503', 'checkout-1')).toBeDefined());
      const made = await orderMadeWith('paused-503', 'checkout-1');

      const retry = await buy('paused-503', 'checkout-1', unlimited);
      expect(retry.statusCode).toBe(202);
      expect(retry.json()).toEqual({ orderId: made, status: 'reserved' });
      expect(await reservedUnits('paused-503')).toBe(1); // bought once, not twice
      // Without the key, the same press would have bought a second unit (the limit is 2).
      expect((await buy('paused-503', undefined, unlimited)).statusCode).toBe(202);
      expect(await reservedUnits('paused-503')).toBe(2);
    },
  );

  it('a client that gave up (connection reset) gets the original order by retrying with the same key', async () => {
    const address = await unlimited.listen({ port: 0, host: '127.0.0.1' });
    const url = `${address}/api/sales/${saleId}/orders`;
    const headers = {
      ...bearer('gave-up'),
      'idempotency-key': 'checkout-7',
      'content-type': 'application/json',
    };
    redis.signal('SIGSTOP');
    try {
      const abandoned = await fetch(url, {
        method: 'POST',
        headers,
        body: '{}',
        signal: AbortSignal.timeout(300),
      }).catch((error: unknown) => error);
      expect((abandoned as Error).name).toBe('TimeoutError');
    } finally {
      redis.signal('SIGCONT');
    }
    await eventually(async () => expect(await orderMadeWith('gave-up', 'checkout-7')).toBeDefined());
    const made = await orderMadeWith('gave-up', 'checkout-7');
    const retry = await fetch(url, { method: 'POST', headers, body: '{}' });
    expect(retry.status).toBe(202);
    expect(await retry.json()).toEqual({ orderId: made, status: 'reserved' });
    expect(await reservedUnits('gave-up')).toBe(1);
  });
});

describe('PostgreSQL down (pg_ctl stop -m immediate)', () => {
  it('keeps selling, says the database is down and the pipeline retrying, and records everything once it is back', async () => {
    const since = logged.length;
    await postgres.stopImmediately();
    const orders: string[] = [];
    for (const user of ['pg-a', 'pg-b', 'pg-c']) {
      const response = await buy(user);
      expect(response.statusCode).toBe(202); // buying needs only Redis
      orders.push(response.json().orderId as string);
    }
    expectUnavailable(await app.inject({ method: 'GET', url: `/api/sales/${saleId}` }));
    expect(await unavailableCount('database')).toBeGreaterThanOrEqual(1);
    await eventually(async () => {
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      expect(health.statusCode).toBe(200); // still selling: not out of rotation
      expect(health.json()).toMatchObject({
        status: 'degraded',
        redis: 'ok',
        database: 'down',
        pipeline: 'retrying',
        backlog: { consumers: 1, retryingForMs: expect.any(Number) },
      });
    });

    await postgres.restart();
    // The pipeline resumes by itself: every reservation made during the outage is recorded.
    await eventually(async () => {
      const { rows } = await runtime.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM orders WHERE id = ANY($1::bigint[]) AND status = $2',
        [orders, 'confirmed'],
      );
      expect(rows[0]?.n).toBe(orders.length);
    });
    const first = await app.inject({
      method: 'GET',
      url: `/api/orders/${orders[0]}`,
      headers: bearer('pg-a'),
    });
    expect(first.json()).toMatchObject({ orderId: orders[0], status: 'confirmed' });
    await eventually(async () => {
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      expect(health.json()).toMatchObject({ status: 'ok', database: 'ok', pipeline: 'ok' });
    });
    // The pipeline retried through the outage (every 250 ms): one line each way, no line per retry.
    expectOneLineEachWay(logged.slice(since), 'database');
  });
});

/** One line when `dependency` went, one when it came back, and no failure logged per retry. */
function expectOneLineEachWay(lines: string[], dependency: 'redis' | 'database') {
  const messages = lines.map((line) => (JSON.parse(line) as { msg: string }).msg);
  expect(
    messages.filter((m) => m.startsWith(`${dependency} unavailable`)),
    lines.join('\n'),
  ).toHaveLength(1);
  expect(messages.filter((m) => m === `${dependency} is back`)).toHaveLength(1);
  expect(
    messages.filter((m) => / failed|not written/.test(m)),
    messages.join('\n'),
  ).toEqual([]);
}
