import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, expect } from 'vitest';
import { PostgresServer, RedisCluster, type RedisClusterOptions } from '@lockstock/servers';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { Resources } from '../../src/cli/lifecycle.js';
import { startRuntime, type Runtime } from '../../src/cli/runtime.js';

/**
 * A Redis Cluster (as `RedisCluster.start` makes it) and a PostgreSQL for a test file, and the service
 * on them as `serve` assembles it (startRuntime; rate limits on: they ask Redis first), with one open
 * sale. For the tests that fail the Cluster under a sale (test/http/cluster-*.test.ts).
 */
export function useClusterApp(secret: string, clusterOptions: RedisClusterOptions) {
  const state = {} as {
    cluster: RedisCluster;
    postgres: PostgresServer;
    runtime: Runtime;
    app: FastifyInstance;
  };
  let saleId = '';
  let buyers = 0;
  const resources = new Resources();

  beforeAll(async () => {
    [state.cluster, state.postgres] = await Promise.all([
      RedisCluster.start(clusterOptions),
      PostgresServer.start(),
    ]);
    const seeds = state.cluster.startupNodes.map(({ host, port }) => `${host}:${port}`).join(',');
    state.runtime = await startRuntime(
      {
        redisUrl: `redis-cluster://${seeds}`,
        databaseUrl: state.postgres.url,
        pipelines: 1,
        redisCommandTimeoutMs: 1_500,
        logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
      },
      resources,
    );
    const { runtime } = state;
    state.app = await buildApp({
      service: runtime.service,
      context: runtime.context,
      db: runtime.db,
      metrics: runtime.metrics,
      config: { jwtSecret: secret, rateLimitPerUser: 1_000, rateLimitPerIp: 1_000 },
      logger: runtime.logger,
      pipelines: () => runtime.pipelines.map((p) => p.health),
    });
    resources.add('the app', () => state.app.close());
    saleId = (
      await runtime.service.createSale({ name: 'cluster outage sale', stock: 10_000, perUserLimit: 5 })
    ).id;
  }, 120_000);

  // Each resource has 5 s to close (Resources), so this bound is reached only by the servers' stop.
  afterAll(async () => {
    await resources.closeAll();
    await Promise.all([state.cluster?.stop(), state.postgres?.stop()]);
  }, 180_000);

  /** One purchase by a new buyer. */
  const buy = () =>
    state.app.inject({
      method: 'POST',
      url: `/api/sales/${saleId}/orders`,
      headers: { authorization: `Bearer ${signToken(secret, `buyer-${++buyers}`)}` },
      payload: {},
    });

  return {
    get cluster() {
      return state.cluster;
    },
    get runtime() {
      return state.runtime;
    },
    get saleId() {
      return saleId;
    },
    buy,
    /** Buys (one at a time) until `until()` holds and at least `atLeast` more answers came. */
    async buyThrough(until: () => Promise<boolean>, atLeast: number): Promise<LightMyRequestResponse[]> {
      const answers: LightMyRequestResponse[] = [];
      let after = -1;
      while (after < atLeast) {
        answers.push(await buy());
        if (after >= 0) after++;
        else if (await until()) after = 0;
      }
      return answers;
    },
  };
}

/** Every answer is a 202 or a 503 `service_unavailable` with Retry-After: never a 500. */
export function expectNoFiveHundred(answers: LightMyRequestResponse[]): void {
  const statuses = answers.map((a) => a.statusCode);
  const wrong = answers.filter((a) => a.statusCode !== 202 && a.statusCode !== 503);
  expect(
    wrong.map((a) => `${a.statusCode} ${a.body}`),
    `statuses: ${statuses.join(',')}`,
  ).toEqual([]);
  for (const answer of answers.filter((a) => a.statusCode === 503)) {
    expect(answer.headers['retry-after']).toBe('1');
    expect(answer.json()).toMatchObject({ error: 'service_unavailable', message: expect.any(String) });
  }
}
