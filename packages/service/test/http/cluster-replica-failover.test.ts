import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { expectNoFiveHundred, useClusterApp } from '../helpers/cluster-app.js';

/**
 * A Redis Cluster with a replica per master fails over mid-sale (issue 35, defect 1, as the outside
 * run did it): while the sale slot's master is dead and until its replica is promoted, and while the
 * old master rejoins as a replica, purchases are answered 202 or 503 with Retry-After, never 500. The
 * failover's shapes — a closed connection retried, MOVED to the promoted replica, CLUSTERDOWN for the
 * moment the cluster marks the slot failed — reach the service wrapped in "Too many Cluster
 * redirections". cluster-failover.test.ts has the Cluster without replicas (down until it is back).
 */
const env = useClusterApp('cluster-replica-failover-secret-0123456789', { masters: 3, replicasPerMaster: 1 });

describe('a Redis Cluster master failing over to its replica mid-sale', () => {
  it('answers 202 or 503 (never 500) until the replica is promoted and while the old master rejoins; sells on the promoted replica', async () => {
    const probe = new Redis(env.cluster.nodes[0]!.url);
    const slot = (await probe.call('CLUSTER', 'KEYSLOT', saleKeys(env.saleId).stock)) as number;
    probe.disconnect();
    const owner = await env.cluster.masterOf(slot);
    expect((await env.buy()).statusCode).toBe(202);

    await owner.kill();
    // Buy until another node serves the slot (the failover) and the sale has answered 202 on it.
    const promoted = async () => {
      const now = await env.cluster.masterOf(slot).catch(() => owner);
      return now !== owner;
    };
    const duringFailover = await env.buyThrough(promoted, 1);
    const afterPromotion: LightMyRequestResponse[] = [];
    while (!afterPromotion.some((a) => a.statusCode === 202) && afterPromotion.length < 2_000)
      afterPromotion.push(await env.buy());
    expectNoFiveHundred([...duringFailover, ...afterPromotion]);
    expect(afterPromotion.some((a) => a.statusCode === 202)).toBe(true);
    expect(duringFailover.filter((a) => a.statusCode === 503).length).toBeGreaterThan(0);

    // The old master comes back: it rejoins as the new master's replica.
    await owner.restart();
    const whileRejoining: LightMyRequestResponse[] = [];
    for (let i = 0; i < 50; i++) whileRejoining.push(await env.buy());
    expectNoFiveHundred(whileRejoining);
    expect((await env.cluster.masterOf(slot)) === owner).toBe(false);
  });
});
