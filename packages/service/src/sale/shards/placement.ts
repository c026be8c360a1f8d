import { isCluster } from 'lockstock/redis';
import type { SaleRedis } from '../redis.js';
import { partTag } from './layout.js';

/** Salts tried per part before giving up (a master serving 1/M of the slots takes ~M tries). */
const MAX_SALTS = 100_000;

/** A master of a Cluster and the slot ranges it serves. */
export interface ClusterMaster {
  /** host:port as the Cluster announces it */
  readonly address: string;
  readonly ranges: ReadonlyArray<readonly [from: number, to: number]>;
}

export interface Placement {
  /** One hash tag per part. */
  readonly tags: string[];
  /** The master that serves each part's slot when it was placed (host:port; "" on one Redis). */
  readonly masters: string[];
}

/**
 * Chooses the parts' hash tags so that, on a Cluster, part p's slot is served by master (m₀ + p) mod M
 * (m₀ from the sale id): K parts on K ≤ M masters land on K distinct masters by construction. For each
 * part the salt is the first whose tag `CLUSTER KEYSLOT` puts on a slot the intended master serves.
 * On one Redis every salt is 0.
 */
export async function placeParts(redis: SaleRedis, saleId: string, parts: number): Promise<Placement> {
  if (!isCluster(redis)) {
    return {
      tags: Array.from({ length: parts }, (_, p) => partTag(saleId, p, 0)),
      masters: Array.from({ length: parts }, () => ''),
    };
  }
  const masters = await clusterMasters(redis);
  if (masters.length === 0) throw new Error('the Cluster reports no master serving slots');
  const first = Number(BigInt(saleId) % BigInt(masters.length));
  const tags: string[] = [];
  const chosen: string[] = [];
  for (let p = 0; p < parts; p++) {
    const master = masters[(first + p) % masters.length] as ClusterMaster;
    tags.push(await saltFor(redis, saleId, p, master));
    chosen.push(master.address);
  }
  return { tags, masters: chosen };
}

async function saltFor(redis: SaleRedis, saleId: string, part: number, master: ClusterMaster) {
  for (let salt = 0; salt < MAX_SALTS; salt++) {
    const tag = partTag(saleId, part, salt);
    const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', `{${tag}}`));
    if (master.ranges.some(([from, to]) => slot >= from && slot <= to)) return tag;
  }
  throw new Error(`no tag for part ${part} of sale ${saleId} on ${master.address} in ${MAX_SALTS} tries`);
}

/** The Cluster's masters that serve slots, in slot order (`CLUSTER SHARDS`). */
export async function clusterMasters(redis: SaleRedis): Promise<ClusterMaster[]> {
  const shards = (await redis.call('CLUSTER', 'SHARDS')) as unknown[][];
  const masters: ClusterMaster[] = [];
  for (const shard of shards) {
    const fields = pairs(shard);
    const slots = (fields.get('slots') as Array<number | string> | undefined) ?? [];
    const ranges: Array<[number, number]> = [];
    for (let i = 0; i + 1 < slots.length; i += 2) ranges.push([Number(slots[i]), Number(slots[i + 1])]);
    if (ranges.length === 0) continue;
    const nodes = ((fields.get('nodes') as unknown[][] | undefined) ?? []).map(pairs);
    const master = nodes.find((node) => node.get('role') === 'master');
    if (!master) continue;
    const host = String(master.get('endpoint') ?? master.get('ip'));
    masters.push({ address: `${host}:${String(master.get('port'))}`, ranges });
  }
  return masters.sort((a, b) => (a.ranges[0]?.[0] ?? 0) - (b.ranges[0]?.[0] ?? 0));
}

function pairs(flat: unknown[]): Map<string, unknown> {
  const map = new Map<string, unknown>();
  for (let i = 0; i + 1 < flat.length; i += 2) map.set(String(flat[i]), flat[i + 1]);
  return map;
}
