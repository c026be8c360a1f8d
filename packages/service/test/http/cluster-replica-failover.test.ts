import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer, RedisCluster } from '@lockstock/servers';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { Resources } from '../../src/cli/lifecycle.js';
import { startRuntime, type Runtime } from '../../src/cli/runtime.js';
import { saleKeys } from '../../src/sale/keys.js';

/**
 * A Redis Cluster with a replica per master fails over mid-sale (issue 35, defect 1, as the outside
 * run did it): while the sale slot's master is dead and until its replica is promoted, and while the
 * old master rejoins as a replica, purchases are answered 202 or 503 with Retry-After, never 500. The
 * failover's shapes — a closed connection retried, MOVED to the promoted replica, CLUSTERDOWN for the
 * moment the cluster marks the slot failed — reach the service wrapped in "Too many Cluster
 * redirections". cluster-failover.test.ts has the Cluster without replicas (down until it is back).
 */
const SECRET = 'cluster-replica-failover-secret-0123456789';
let cluster: RedisCluster;
let postgres: PostgresServer;
let runtime: Runtime;
let app: FastifyInstance;
let saleId: string;
const resources = new Resources();
const bearer = (user: string) => ({ authorization: `Bearer ${signToken(SECRET, user)}` });

beforeAll(async () => {
  [cluster, postgres] = await Promise.all([
    RedisCluster.start({ masters: 3, replicasPerMaster: 1 }),
    PostgresServer.start(),
  ]);
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

describe('a Redis Cluster master failing over to its replica mid-sale', () => {
  it('answers 202 or 503 (never 500) until the replica is promoted and while the old master rejoins; sells on the promoted replica', async () => {
    const probe = new Redis(cluster.nodes[0]!.url);
    const slot = (await probe.call('CLUSTER', 'KEYSLOT', saleKeys(saleId).stock)) as number;
    probe.disconnect();
    const owner = await cluster.masterOf(slot);
    expect((await buy()).statusCode).toBe(202);

    await owner.kill();
    // Buy until another node serves the slot (the failover) and the sale has answered 202 on it.
    const promoted = async () => {
      const now = await cluster.masterOf(slot).catch(() => owner);
      return now !== owner;
    };
    const duringFailover = await buyThrough(promoted, 1);
    const afterPromotion: LightMyRequestResponse[] = [];
    while (!afterPromotion.some((a) => a.statusCode === 202) && afterPromotion.length < 2_000)
      afterPromotion.push(await buy());
    expectNoFiveHundred([...duringFailover, ...afterPromotion]);
    expect(afterPromotion.some((a) => a.statusCode === 202)).toBe(true);
    expect(duringFailover.filter((a) => a.statusCode === 503).length).toBeGreaterThan(0);

    // The old master comes back: it rejoins as the new master's replica.
    await owner.restart();
    const whileRejoining: LightMyRequestResponse[] = [];
    for (let i = 0; i < 50; i++) whileRejoining.push(await buy());
    expectNoFiveHundred(whileRejoining);
    expect((await cluster.masterOf(slot)) === owner).toBe(false);
  });
});
