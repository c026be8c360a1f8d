import { Redis } from 'ioredis';
import { RedisServer } from './redis.js';

const SLOTS = 16_384;

export interface RedisClusterOptions {
  /** Masters; the slots are split evenly between them. @default 3 */
  masters?: number;
  /**
   * Replicas per master (`CLUSTER REPLICATE`): with one or more, a master that dies is failed over to
   * its replica after `cluster-node-timeout` (2 s), as a production Cluster does. @default 0
   */
  replicasPerMaster?: number;
  /** Extra `redis-server` arguments for every node. */
  args?: string[];
  /** How long to wait for the cluster to agree on its state, ms. @default 20000 */
  timeoutMs?: number;
}

/**
 * A Redis Cluster of real redis-server processes on loopback, built the way `redis-cli --cluster
 * create` does it: each node started with `--cluster-enabled yes`, introduced to the others with
 * CLUSTER MEET, the masters given an even share of the slots with CLUSTER ADDSLOTSRANGE, the replicas
 * (if any) attached to their master with CLUSTER REPLICATE, then awaited until every node reports
 * `cluster_state:ok`, knows every other node, and every replica is in sync.
 */
export class RedisCluster {
  private constructor(
    /** The masters, in slot order (the first serves slot 0). */
    readonly nodes: readonly RedisServer[],
    /** The replicas: `replicas[i]` are the i-th master's, as started. */
    readonly replicas: readonly (readonly RedisServer[])[] = [],
  ) {}

  /** Seed nodes for an ioredis `Cluster`. */
  get startupNodes(): Array<{ host: string; port: number }> {
    return this.nodes.map((node) => ({ host: node.host, port: node.port }));
  }

  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const count = options.masters ?? 3;
    const perMaster = options.replicasPerMaster ?? 0;
    const nodes = await Promise.all(
      Array.from({ length: count * (1 + perMaster) }, () =>
        RedisServer.start({
          args: [
            '--cluster-enabled', 'yes',
            '--cluster-config-file', 'nodes.conf',
            '--cluster-node-timeout', '2000',
            ...(options.args ?? []),
          ], // prettier-ignore
        }),
      ),
    );
    const masters = nodes.slice(0, count);
    const replicas = masters.map((_, i) => nodes.slice(count + i * perMaster, count + (i + 1) * perMaster));
    const cluster = new RedisCluster(masters, replicas);
    try {
      await cluster.form(options.timeoutMs ?? 20_000);
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** Every node, masters first. */
  get allNodes(): RedisServer[] {
    return [...this.nodes, ...this.replicas.flat()];
  }

  private async form(timeoutMs: number): Promise<void> {
    const all = this.allNodes;
    const admins = all.map((node) => new Redis(node.url, { lazyConnect: false, maxRetriesPerRequest: 1 }));
    try {
      const first = admins[0]!;
      for (const node of all.slice(1)) await first.call('CLUSTER', 'MEET', node.host, String(node.port));
      const masters = admins.slice(0, this.nodes.length);
      const share = Math.ceil(SLOTS / masters.length);
      await Promise.all(
        masters.map((admin, i) => {
          const from = i * share;
          const to = Math.min(SLOTS, from + share) - 1;
          return admin.call('CLUSTER', 'ADDSLOTSRANGE', String(from), String(to));
        }),
      );
      const deadline = performance.now() + timeoutMs;
      if (this.replicas.some((group) => group.length > 0)) await this.attachReplicas(admins, deadline);
      for (;;) {
        const infos = await Promise.all(
          admins.map((admin) => admin.call('CLUSTER', 'INFO') as Promise<string>),
        );
        const synced = await Promise.all(
          admins.slice(this.nodes.length).map(async (admin) => {
            const info = (await admin.call('INFO', 'replication')) as string;
            return /master_link_status:up/.test(info) && !/master_sync_in_progress:1/.test(info);
          }),
        );
        const ready =
          synced.every(Boolean) &&
          infos.every(
            (info) =>
              /cluster_state:ok/.test(info) &&
              new RegExp(`cluster_known_nodes:${admins.length}\\b`).test(info),
          );
        if (ready) return;
        if (performance.now() > deadline)
          throw new Error(`the cluster did not form in ${timeoutMs} ms:\n${infos[0]}`);
        await new Promise((resolve) => setTimeout(resolve, 50)); // gossip settles in its own time
      }
    } finally {
      admins.forEach((admin) => admin.disconnect());
    }
  }

  /**
   * Each replica replicates its master (by node id). A replica must know its master first: MEET is
   * gossip, so CLUSTER REPLICATE is retried until the id is known (bounded by the formation deadline).
   */
  private async attachReplicas(admins: Redis[], deadline: number): Promise<void> {
    const ids = await Promise.all(
      admins.slice(0, this.nodes.length).map((admin) => admin.call('CLUSTER', 'MYID') as Promise<string>),
    );
    let next = this.nodes.length;
    for (const [i, group] of this.replicas.entries()) {
      for (let r = 0; r < group.length; r++) {
        const admin = admins[next++]!;
        for (;;) {
          try {
            await admin.call('CLUSTER', 'REPLICATE', ids[i]!);
            break;
          } catch (error) {
            if (performance.now() > deadline) throw error;
            await new Promise((resolve) => setTimeout(resolve, 50)); // gossip brings the master's id
          }
        }
      }
    }
  }

  /** The master now serving `slot` (after a failover, a former replica), from a live node's view. */
  async masterOf(slot: number): Promise<RedisServer> {
    for (const node of this.allNodes.filter((n) => n.running)) {
      const admin = new Redis(node.url, { maxRetriesPerRequest: 1 });
      try {
        const ranges = (await admin.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
        const port = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2][1];
        const found = this.allNodes.find((n) => n.port === port);
        if (found) return found;
      } catch {
        // a node that cannot answer: ask the next
      } finally {
        admin.disconnect();
      }
    }
    throw new Error(`no live node knows who serves slot ${slot}`);
  }

  async stop(): Promise<void> {
    await Promise.all(this.allNodes.map((node) => node.stop()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
