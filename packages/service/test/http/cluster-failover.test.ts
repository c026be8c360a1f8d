import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { RedisServer } from '@lockstock/servers';
import { saleKeys } from '../../src/sale/keys.js';
import { expectNoFiveHundred, useClusterApp } from '../helpers/cluster-app.js';

/**
 * A Redis Cluster master lost mid-sale (issue 35, defect 1): purchases must be answered 503 with
 * Retry-After, never 500. ioredis hands such a purchase "Too many Cluster redirections. Last error:
 * …" — the slot's master gone (Connection is closed, retried), or a live master answering CLUSTERDOWN
 * once the cluster marks itself failed — a shape the old classifier (a message prefix) took for a
 * bug. The service runs as `serve` assembles it (startRuntime, rate limits on: they ask Redis first).
 */
const env = useClusterApp('cluster-failover-secret-0123456789', { masters: 3 });

/** The master serving `key`'s slot, and one that does not. */
async function mastersFor(key: string): Promise<{ owner: RedisServer; other: RedisServer }> {
  const probe = new Redis(env.cluster.nodes[0]!.url);
  try {
    const slot = (await probe.call('CLUSTER', 'KEYSLOT', key)) as number;
    const ranges = (await probe.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
    const port = ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
    const owner = env.cluster.nodes.find((node) => node.port === port)!;
    return { owner, other: env.cluster.nodes.find((node) => node !== owner)! };
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
  const text = await env.runtime.metrics.registry.getSingleMetricAsString('lockstock_http_unavailable_total');
  return Number(/dependency="redis"\} (\d+)/.exec(text)?.[1] ?? 0);
}

describe('a Redis Cluster master lost mid-sale', () => {
  it('answers 503 (never 500) while the cluster is down — the sale slot’s master gone, or another one — and sells again once it is back', async () => {
    const { owner, other } = await mastersFor(saleKeys(env.saleId).stock);
    expect((await env.buy()).statusCode).toBe(202);
    const before = await unavailableCount();

    // Another master dies: the sale's own master answers CLUSTERDOWN once the cluster marks itself
    // failed (cluster-node-timeout, 2 s), and ioredis retries that until it runs out of redirections.
    await other.kill();
    const whileOtherDown = await env.buyThrough(async () => (await clusterState(owner)) === 'fail', 5);
    expectNoFiveHundred(whileOtherDown);
    expect(whileOtherDown.filter((a) => a.statusCode === 503).length).toBeGreaterThanOrEqual(5);
    await other.restart();
    await expect.poll(async () => (await env.buy()).statusCode, { timeout: 60_000, interval: 100 }).toBe(202);

    // The sale slot's own master dies: its connection closes, and ioredis retries on it.
    await owner.kill();
    const whileOwnerDown = await env.buyThrough(async () => (await clusterState(other)) === 'fail', 5);
    expectNoFiveHundred(whileOwnerDown);
    expect(whileOwnerDown.filter((a) => a.statusCode === 503).length).toBeGreaterThanOrEqual(5);
    await owner.restart();
    await expect.poll(async () => (await env.buy()).statusCode, { timeout: 60_000, interval: 100 }).toBe(202);

    const unavailable = whileOtherDown.length + whileOwnerDown.length;
    expect(await unavailableCount()).toBeGreaterThanOrEqual(
      before +
        unavailable -
        [...whileOtherDown, ...whileOwnerDown].filter((a) => a.statusCode === 202).length,
    );
  });
});
