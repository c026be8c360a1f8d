import type { Strategy } from '../types.js';
import { labCluster, clusterClient, stopLabCluster } from './cluster.js';
import { labScripts } from './lua/index.js';
import { ScriptRunner } from 'lockstock/redis';

/** A segment's keys: each segment its own hash tag, so its own slot (on whichever master: by luck). */
const segmentKeys = (runId: string, i: number) => ({
  stock: `lab:{${runId}:seg${i}}:stock`,
  buyers: `lab:{${runId}:seg${i}}:buyers`,
});
const orderKeys = (runId: string) => ({
  orders: `lab:{${runId}}:orders`,
  soldAt: `lab:{${runId}}:sold-at`,
});

/** How many times a buyer presses "buy": twice, a double click, as buyers do under load. */
const pressesOf = (options: Readonly<Record<string, unknown>>) => Number(options.presses ?? 2);

/**
 * The usual answer to one hot key, taken to a Redis Cluster: split the stock into K segments with
 * hash tags of their own (so they spread over the masters), route each purchase to a random segment,
 * and let the segment's script check its stock and one-per-user there — nothing more.
 */
export const clusterNaiveSplit: Strategy = {
  name: 'cluster-naive-split',
  title: 'Stock split into K segments on a Cluster, each purchase routed to a random segment',
  claim:
    "The blog posts' answer to one hot key (redis-lua-segmented’s segments taken to a Cluster): K segments on the masters, buyers routed at random, each segment an atomic script with its own stock and buyers — K masters of throughput.",
  expectation: 'sells_out_early_or_twice',
  note: 'A buyer routed to an empty segment is told "sold out" while other segments still have units, and those units are left unsold at the end; a buyer who presses twice can land on two segments and buy twice (each segment knows only its own buyers). lockstock\'s split sale (cluster-split-sale) routes by user and moves units between parts: none of the three.',
  async prepare(_env, run) {
    const nodes = await labCluster();
    const redis = clusterClient(nodes);
    const k = Number(run.options.segments ?? 3);
    for (let i = 0; i < k; i++) {
      const keys = segmentKeys(run.runId, i);
      await redis.set(keys.stock, Math.floor(run.stock / k) + (i < run.stock % k ? 1 : 0));
    }
    return { cluster: nodes };
  },
  async buyer(_env, run) {
    const redis = clusterClient(String(run.options.cluster));
    const scripts = new ScriptRunner(redis);
    const k = Number(run.options.segments ?? 3);
    const presses = pressesOf(run.options);
    const keys = orderKeys(run.runId);
    return async (buyer) => {
      let bought = false;
      for (let press = 0; press < presses; press++) {
        const segment = segmentKeys(run.runId, Math.floor(Math.random() * k));
        const soldAt = Number(
          await scripts.run(labScripts.takeSegmentOnce, [segment.stock, segment.buyers], [buyer]),
        );
        if (soldAt > 0) {
          await redis.rpush(keys.orders, buyer);
          await redis.rpush(keys.soldAt, soldAt);
          bought = true;
        }
      }
      return bought;
    };
  },
  async inspect(_env, run) {
    const redis = clusterClient(String(run.options.cluster));
    const k = Number(run.options.segments ?? 3);
    const keys = orderKeys(run.runId);
    let finalStock = 0;
    for (let i = 0; i < k; i++) finalStock += Number(await redis.get(segmentKeys(run.runId, i).stock));
    return {
      orders: await redis.lrange(keys.orders, 0, -1),
      finalStock,
      soldAtMs: (await redis.lrange(keys.soldAt, 0, -1)).map(Number),
    };
  },
  teardown: stopLabCluster,
};
