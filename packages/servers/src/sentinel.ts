import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './ports.js';
import { spawnServer, stopProcess, type StartedProcess } from './process.js';
import { findRedisServer, RedisServer } from './redis.js';

export interface SentinelGroupOptions {
  /** Replicas of the master. @default 1 */
  replicas?: number;
  /**
   * How long a silent master takes to be declared down, ms. At 500 ms a Sentinel may find a master it
   * has just promoted down and fail over again; harmless while the old master is dead (no replica is
   * left to promote), but where the old master can come back (a partition), use 2,000 or more.
   * @default 500
   */
  downAfterMs?: number;
  /** @default 2000 */
  failoverTimeoutMs?: number;
}

/**
 * A Sentinel-managed master with replicas, all real processes on loopback: the master, replicas
 * started with `--replicaof` (awaited until in sync), and one Sentinel (`redis-server <conf>
 * --sentinel`, quorum 1) monitoring them under the name `lockstock`. Kill the master and the Sentinel
 * promotes a replica; clients connected through the Sentinel follow.
 */
export class RedisSentinelGroup {
  readonly masterName = 'lockstock';

  private constructor(
    readonly master: RedisServer,
    readonly replicas: readonly RedisServer[],
    private readonly sentinel: StartedProcess,
    readonly sentinelPort: number,
    private readonly dir: string,
  ) {}

  /** Seed nodes for an ioredis client: `new Redis({ sentinels, name: group.masterName })`. */
  get sentinels(): Array<{ host: string; port: number }> {
    return [{ host: '127.0.0.1', port: this.sentinelPort }];
  }

  static async start(options: SentinelGroupOptions = {}): Promise<RedisSentinelGroup> {
    const master = await RedisServer.start();
    const replicas: RedisServer[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-sentinel-'));
    try {
      for (let i = 0; i < (options.replicas ?? 1); i++) {
        replicas.push(await RedisServer.start({ args: ['--replicaof', master.host, String(master.port)] }));
      }
      await inSync(master, replicas.length);
      const port = await freePort();
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor lockstock ${master.host} ${master.port} 1`,
          `sentinel down-after-milliseconds lockstock ${options.downAfterMs ?? 500}`,
          `sentinel failover-timeout lockstock ${options.failoverTimeoutMs ?? 2_000}`,
          'sentinel parallel-syncs lockstock 1',
          '',
        ].join('\n'),
      );
      const sentinel = await spawnServer(
        `redis-sentinel on port ${port}`,
        findRedisServer(),
        [conf, '--sentinel'],
        /\+monitor master/,
        {
          cwd: dir,
        },
      );
      const group = new RedisSentinelGroup(master, replicas, sentinel, port, dir);
      // '+monitor' is before the Sentinel has asked the master for its replicas. A caller that cuts
      // replication right away (to lose a write in a failover) would leave it knowing none, and it
      // would never fail over: ready means it knows every replica.
      await group.knowsReplicas(replicas.length).catch(async (error: unknown) => {
        await stopProcess(sentinel, 'SIGTERM');
        throw error;
      });
      return group;
    } catch (error) {
      await Promise.all([master.stop(), ...replicas.map((r) => r.stop())]);
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** The address the Sentinel currently gives for the master (changes after a failover). */
  async currentMaster(): Promise<{ host: string; port: number }> {
    const sentinel = new Redis(this.sentinelPort, '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      const [host, port] = (await sentinel.call('SENTINEL', 'get-master-addr-by-name', this.masterName)) as [
        string,
        string,
      ];
      return { host, port: Number(port) };
    } finally {
      sentinel.disconnect();
    }
  }

  /** Resolves once the Sentinel lists `count` replicas of the master that it can reach. */
  private async knowsReplicas(count: number, timeoutMs = 20_000): Promise<void> {
    const sentinel = new Redis(this.sentinelPort, '127.0.0.1', { maxRetriesPerRequest: 1 });
    try {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const replicas = (await sentinel.call('SENTINEL', 'replicas', this.masterName)) as string[][];
        const reachable = replicas.filter((fields) => {
          const flags = fields[fields.indexOf('flags') + 1] ?? '';
          return !/s_down|disconnected/.test(flags);
        });
        if (reachable.length >= count) return;
        if (performance.now() > deadline) {
          throw new Error(`the Sentinel knew ${reachable.length} of ${count} replicas after ${timeoutMs} ms`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      sentinel.disconnect();
    }
  }

  /** Resolves once the Sentinel names a master other than `previousPort` (a failover completed). */
  async failedOver(previousPort: number, timeoutMs = 60_000): Promise<{ host: string; port: number }> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const current = await this.currentMaster();
      if (current.port !== previousPort) return current;
      if (performance.now() > deadline) throw new Error(`no failover within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50)); // the Sentinel decides in its own time
    }
  }

  /** Resolves once every replica has acknowledged everything the master has written. */
  async caughtUp(timeoutMs = 20_000): Promise<void> {
    await inSync(this.master, this.replicas.length, timeoutMs, true);
  }

  async stop(): Promise<void> {
    await stopProcess(this.sentinel, 'SIGTERM');
    await Promise.all([this.master.stop(), ...this.replicas.map((replica) => replica.stop())]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Waits until `replicas` replicas are online (and, with `offsets`, at the master's offset). */
async function inSync(
  master: RedisServer,
  replicas: number,
  timeoutMs = 20_000,
  offsets = false,
): Promise<void> {
  const redis = new Redis(master.url, { maxRetriesPerRequest: 1 });
  try {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const info = await redis.info('replication');
      const online = info.match(/state=online/g)?.length ?? 0;
      const offset = /master_repl_offset:(\d+)/.exec(info)?.[1];
      const behind = [...info.matchAll(/state=online,offset=(\d+)/g)].filter((m) => m[1] !== offset).length;
      if (online >= replicas && (!offsets || behind === 0)) return;
      if (performance.now() > deadline)
        throw new Error(`replicas not in sync within ${timeoutMs} ms:\n${info}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    redis.disconnect();
  }
}
