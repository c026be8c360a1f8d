import { Redis } from 'ioredis';
import { RedisServer } from './redis.js';

const SLOTS = 16_384;

export interface RedisClusterOptions {
  /** Masters; the slots are split evenly between them. @default 3 */
  masters?: number;
  /** Extra `redis-server` arguments for every node. */
  args?: string[];
  /** How long to wait for the cluster to agree on its state, ms. @default 20000 */
  timeoutMs?: number;
}

/**
 * A Redis Cluster of real redis-server processes on loopback, built the way `redis-cli --cluster
 * create` does it but without replicas: each node started with `--cluster-enabled yes`, introduced
 * to the others with CLUSTER MEET, given an even share of the slots with CLUSTER ADDSLOTSRANGE, then
 * awaited until every node reports `cluster_state:ok` and knows every other node.
 */
export class RedisCluster {
  private constructor(readonly nodes: readonly RedisServer[]) {}

  /** Seed nodes for an ioredis `Cluster`. */
  get startupNodes(): Array<{ host: string; port: number }> {
    return this.nodes.map((node) => ({ host: node.host, port: node.port }));
  }

  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const count = options.masters ?? 3;
    const nodes = await Promise.all(
      Array.from({ length: count }, () =>
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
    const cluster = new RedisCluster(nodes);
    try {
      await cluster.form(options.timeoutMs ?? 20_000);
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  private async form(timeoutMs: number): Promise<void> {
    const admins = this.nodes.map(
      (node) => new Redis(node.url, { lazyConnect: false, maxRetriesPerRequest: 1 }),
    );
    try {
      const first = admins[0]!;
      for (const node of this.nodes.slice(1))
        await first.call('CLUSTER', 'MEET', node.host, String(node.port));
      const share = Math.ceil(SLOTS / admins.length);
      await Promise.all(
        admins.map((admin, i) => {
          const from = i * share;
          const to = Math.min(SLOTS, from + share) - 1;
          return admin.call('CLUSTER', 'ADDSLOTSRANGE', String(from), String(to));
        }),
      );
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const infos = await Promise.all(
          admins.map((admin) => admin.call('CLUSTER', 'INFO') as Promise<string>),
        );
        const ready = infos.every(
          (info) =>
            /cluster_state:ok/.test(info) && new RegExp(`cluster_known_nodes:${admins.length}\\b`).test(info),
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

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
