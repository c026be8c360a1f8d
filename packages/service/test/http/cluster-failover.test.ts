import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer, RedisCluster, type RedisServer } from '@lockstock/servers';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { Resources } from '../../src/cli/lifecycle.js';
import { startRuntime, type Runtime } from '../../src/cli/runtime.js';
import { saleKeys } from '../../src/sale/keys.js';

/**
 * A Redis Cluster master lost mid-sale (issue 35, defect 1): purchases must be answered 503 with
 * Retry-After, never 500. ioredis hands such a purchase "Too many Cluster redirections. Last error:
 * …" — the slot's master gone (Connection is closed, retried), or a live master answering CLUSTERDOWN
 * once the cluster marks itself failed — a shape the old classifier (a message prefix) took for a
 * bug. The service runs as `serve` assembles it (startRuntime, rate limits on: they ask Redis first).
 */
const SECRET = 'cluster-failover-secret-0123456789';
let cluster: RedisCluster;
let postgres: PostgresServer;
let runtime: Runtime;
let app: FastifyInstance;
let saleId: string;
const resources = new Resources();
const bearer = (user: string) => ({ authorization: `Bearer ${signToken(SECRET, user)}` });

beforeAll(async () => {
  [cluster, postgres] = await Promise.all([RedisCluster.start({ masters: 3 }), PostgresServer.start()]);
  const seeds = cluster.startupNodes.map(({ host, port }) => `${host}:${port}`).join(',');
  runtime = await startRuntime(
    {
      redisUrl: `redis-cluster://${seeds}`,
      databaseUrl: postgres.url,
      pipelines: 1,
      redisCommandTimeoutMs: 1_500,
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    },
    resources,
  );
  app = await buildApp({
    service: runtime.service,
    redis: runtime.redis,
    db: runtime.db,
    metrics: runtime.metrics,
    config: { jwtSecret: SECRET, rateLimitPerUser: 1_000, rateLimitPerIp: 1_000 },
    logger: runtime.logger,
    pipelines: () => runtime.pipelines.map((p) => p.health),
  });
  resources.add('the app', () => app.close());
  saleId = (await runtime.service.createSale({ name: 'cluster outage sale', stock: 10_000, perUserLimit: 5 }))
    .id;
}, 120_000);

afterAll(async () => {
  await resources.closeAll();
  await Promise.all([cluster?.stop(), postgres?.stop()]);
});

let buyers = 0;
const buy = () =>
  app.inject({
    method: 'POST',
    url: `/api/sales/${saleId}/orders`,
    headers: bearer(`buyer-${++buyers}`),
    payload: {},
  });

/** The master serving `key`'s slot, and one that does not. */
async function mastersFor(key: string): Promise<{ owner: RedisServer; other: RedisServer }> {
  const probe = new Redis(cluster.nodes[0]!.url);
  try {
    const slot = (await probe.call('CLUSTER', 'KEYSLOT', key)) as number;
    const ranges = (await probe.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
    const port = ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
    const owner = cluster.nodes.find((node) => node.port === port)!;
    return { owner, other: cluster.nodes.find((node) => node !== owner)! };
  } finally {
    probe.disconnect();
  }
}

/** What a live node says of the cluster (`ok` or `fail`). */
async function clusterState(node: RedisServer): Promise<string> {
  const admin = new Redis(node.url, { maxRetriesPerRequest: 1 });
  try {
    const info = (await admin.call('CLUSTER', 'INFO')) as string;
    return /cluster_state:(\w+)/.exec(info)?.[1] ?? 'unknown';
  } finally {
    admin.disconnect();
  }
}

async function unavailableCount(): Promise<number> {
  const text = await runtime.metrics.registry.getSingleMetricAsString('lockstock_http_unavailable_total');
  return Number(/dependency="redis"\} (\d+)/.exec(text)?.[1] ?? 0);
}

/** Buys until `until()` holds and at least `atLeast` more answers came, all awaited one by one. */
async function buyThrough(until: () => Promise<boolean>, atLeast: number): Promise<LightMyRequestResponse[]> {
  const answers: LightMyRequestResponse[] = [];
  let after = -1;
  while (after < atLeast) {
    answers.push(await buy());
    if (after >= 0) after++;
    else if (await until()) after = 0;
  }
  return answers;
}

function expectNoFiveHundred(answers: LightMyRequestResponse[]): void {
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

describe('a Redis Cluster master lost mid-sale', () => {
  it('answers 503 (never 500) while the cluster is down — the sale slot’s master gone, or another one — and sells again once it is back', async () => {
    const { owner, other } = await mastersFor(saleKeys(saleId).stock);
    expect((await buy()).statusCode).toBe(202);
    const before = await unavailableCount();

    // Another master dies: the sale's own master answers CLUSTERDOWN once the cluster marks itself
    // failed (cluster-node-timeout, 2 s), and ioredis retries that until it runs out of redirections.
    await other.kill();
    const whileOtherDown = await buyThrough(async () => (await clusterState(owner)) === 'fail', 5);
    expectNoFiveHundred(whileOtherDown);
    expect(whileOtherDown.filter((a) => a.statusCode === 503).length).toBeGreaterThanOrEqual(5);
    await other.restart();
    await expect.poll(async () => (await buy()).statusCode, { timeout: 60_000, interval: 100 }).toBe(202);

    // The sale slot's own master dies: its connection closes, and ioredis retries on it.
    await owner.kill();
    const whileOwnerDown = await buyThrough(async () => (await clusterState(other)) === 'fail', 5);
    expectNoFiveHundred(whileOwnerDown);
    expect(whileOwnerDown.filter((a) => a.statusCode === 503).length).toBeGreaterThanOrEqual(5);
    await owner.restart();
    await expect.poll(async () => (await buy()).statusCode, { timeout: 60_000, interval: 100 }).toBe(202);

    const unavailable = whileOtherDown.length + whileOwnerDown.length;
    expect(await unavailableCount()).toBeGreaterThanOrEqual(
      before +
        unavailable -
        [...whileOtherDown, ...whileOwnerDown].filter((a) => a.statusCode === 202).length,
    );
  });
});
