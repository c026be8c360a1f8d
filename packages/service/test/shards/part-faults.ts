import { Cluster, Redis } from 'ioredis';
import type { RedisCluster, RedisServer } from '@lockstock/servers';
import { ORDER_GROUP } from '../../src/sale/keys.js';
import type { PartKeys } from '../../src/sale/shards/layout.js';
import { until } from '../helpers/until.js';

/**
 * Faults of one part of a split sale, for the multi-process test (many-processes.ts): what happens to
 * the Cluster master that serves the part's slot, mid-sale.
 * - `master-failover`: the master is SIGKILLed; its replica (the Cluster runs one per master) is
 *   promoted after `cluster-node-timeout`; the old master is restarted and rejoins as its replica.
 *   Replication is asynchronous: writes the replica had not received are lost with the master.
 * - `master-restarted-empty`: the master (no replica, no persistence) is SIGKILLed and restarted on
 *   its port with its cluster config and none of its data: the part, its stream, its transfers gone.
 * - `master-flushed`: the master's data is wiped (`FLUSHALL`, sent by the test) while its process stays
 *   up: the same loss as `master-restarted-empty`, but no connection drops, so nothing reconnects —
 *   the service's check on reconnection never runs; it must notice the part missing some other way.
 */
export type PartFaultKind = 'master-failover' | 'master-restarted-empty' | 'master-flushed';

export interface PartFault {
  readonly kind: PartFaultKind;
  /** The part whose master is hit. */
  readonly part: number;
  /** Injected once this many purchases were answered 202 (the sale is then well under way, not sold out). */
  readonly afterAccepted: number;
}

/** What the fault did, for the report. */
export interface PartFaultReport {
  readonly kind: PartFaultKind;
  readonly part: number;
  readonly injectedAfterAccepted: number;
  /**
   * ms from the SIGKILL to another node serving the slot (failover) or the restarted master up; for
   * `master-flushed`, from the FLUSHALL to the part back in Redis, rebuilt from the record (no flag).
   */
  readonly outageMs: number;
}

/** The Cluster a fault needs: a replica per master for a failover. */
export function replicasFor(fault: PartFault | undefined): number {
  return fault?.kind === 'master-failover' ? 1 : 0;
}

/** Injects `fault` on the master serving `keys`' slot; resolves once the part's slot is served again. */
export async function injectPartFault(
  cluster: RedisCluster,
  fault: PartFault,
  keys: PartKeys,
  accepted: number,
): Promise<PartFaultReport> {
  const admin = new Cluster(cluster.startupNodes);
  let slot: number;
  try {
    slot = (await admin.call('CLUSTER', 'KEYSLOT', keys.stock)) as number;
  } finally {
    admin.disconnect();
  }
  const owner: RedisServer = await cluster.masterOf(slot);
  if (fault.kind === 'master-flushed') return flushMaster(cluster, owner, fault, keys, accepted);
  const began = performance.now();
  await owner.kill();
  if (fault.kind === 'master-restarted-empty') {
    await owner.restart(); // --save '' --appendonly no: nothing to load but nodes.conf
  } else {
    await until(
      `the replica of part ${fault.part}'s master to be promoted`,
      async () => (await cluster.masterOf(slot).catch(() => owner)) !== owner,
      60_000,
    );
  }
  const outageMs = Math.round(performance.now() - began);
  if (fault.kind === 'master-failover') await owner.restart(); // rejoins as the new master's replica
  return { kind: fault.kind, part: fault.part, injectedAfterAccepted: accepted, outageMs };
}

/** FLUSHALL on the part's master, on a connection of its own; resolves once the part is rebuilt. */
async function flushMaster(
  cluster: RedisCluster,
  owner: RedisServer,
  fault: PartFault,
  keys: PartKeys,
  accepted: number,
): Promise<PartFaultReport> {
  const direct = new Redis(owner.port, owner.host, { lazyConnect: true });
  const began = performance.now();
  try {
    await direct.connect();
    await direct.flushall();
  } finally {
    direct.disconnect();
  }
  const redis = new Cluster(cluster.startupNodes);
  try {
    // Nothing here restarts, reconnects or tells the service: the part comes back only if the service
    // notices on its own. A part never rebuilt fails the row here, naming it.
    await until(
      `part ${fault.part} to be rebuilt after its master's FLUSHALL`,
      async () => (await redis.exists(keys.stock)) === 1 && (await redis.exists(keys.recovering)) === 0,
      60_000,
    );
  } finally {
    redis.disconnect();
  }
  const outageMs = Math.round(performance.now() - began);
  return { kind: fault.kind, part: fault.part, injectedAfterAccepted: accepted, outageMs };
}

/**
 * Every part's stream read to its end by the order pipelines and acknowledged: all that Redis still
 * holds is in the record (what a lost master held and no pipeline read is not, and never will be).
 */
export async function streamsDrained(redis: Cluster, parts: readonly PartKeys[]): Promise<boolean> {
  for (const keys of parts) {
    const groups = (await redis.xinfo('GROUPS', keys.stream).catch(() => [])) as unknown[][];
    const group = groups
      .map((fields) => Object.fromEntries(pairs(fields)))
      .find((g) => g.name === ORDER_GROUP);
    if (!group || Number(group.pending) !== 0) return false;
    // Nothing after what the group was given. (Not "last delivered = last generated": a rebuilt
    // stream's id floor (XSETID) moves the latter with no entry to deliver, until the next one.)
    const after = await redis.xrange(keys.stream, `(${String(group['last-delivered-id'])}`, '+', 'COUNT', 1);
    if (after.length > 0) return false;
  }
  return true;
}

function pairs(fields: unknown[]): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (let i = 0; i + 1 < fields.length; i += 2) out.push([String(fields[i]), fields[i + 1]]);
  return out;
}
