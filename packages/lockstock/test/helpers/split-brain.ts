import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findRedisServer, freePort, RedisServer } from '@lockstock/servers';
import { Redis } from 'ioredis';
import { FaultProxy } from './fault-proxy.js';

const NAME = 'lockstock';

/**
 * A Sentinel-managed master and replica whose master can be cut off from the rest: the replica and
 * the Sentinel reach the master only through one fault proxy (`link`), so blackholing it partitions
 * the master from the Sentinel and the replica while clients connected to the master directly keep
 * using it — Kleppmann's and the Redis docs' split brain (RELIABILITY.md §2.3 L7, done with a proxy
 * instead of a network namespace). The launchers' RedisSentinelGroup connects everything directly,
 * so this builds its own group from RedisServer and a Sentinel process.
 */
export class SplitBrainGroup {
  readonly masterName = NAME;

  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer,
    /** Replica → master and Sentinel → master. */
    readonly link: FaultProxy,
    readonly sentinelPort: number,
    private readonly sentinel: ChildProcess,
    private readonly sentinelExited: Promise<unknown>,
    private readonly dir: string,
  ) {}

  get sentinels(): Array<{ host: string; port: number }> {
    return [{ host: '127.0.0.1', port: this.sentinelPort }];
  }

  static async start(): Promise<SplitBrainGroup> {
    const master = await RedisServer.start();
    const link = await FaultProxy.start({ host: master.host, port: master.port });
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(link.port)] });
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-split-brain-'));
    const stopAll = async () => {
      await Promise.all([master.stop(), replica.stop(), link.stop()]);
      rmSync(dir, { recursive: true, force: true });
    };
    try {
      await until(
        async () => /master_link_status:up/.test(await info(replica.url, 'replication')),
        'replica in sync',
      );
      const port = await freePort();
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${NAME} 127.0.0.1 ${link.port} 1`,
          // Not 500 ms: a Sentinel found each newly promoted master down about 500 ms after the
          // switch and failed over again, back and forth, until one side stuck (its log: six
          // switches in 7 s, ending with the partitioned old master as master, so the heal never
          // demoted it). With 2 s, one switch.
          `sentinel down-after-milliseconds ${NAME} 2000`,
          `sentinel failover-timeout ${NAME} 2000`,
          '',
        ].join('\n'),
      );
      const sentinel = spawn(findRedisServer(), [conf, '--sentinel'], { cwd: dir, stdio: 'ignore' });
      const exited = once(sentinel, 'exit');
      exited.catch(() => undefined);
      const orphan = () => sentinel.kill('SIGKILL');
      process.once('exit', orphan);
      void exited.then(
        () => process.off('exit', orphan),
        () => undefined,
      );
      const group = new SplitBrainGroup(master, replica, link, port, sentinel, exited, dir);
      // Ready once the Sentinel knows the replica (it learns it from the master's INFO).
      await until(async () => {
        const replicas = (await group.ask('replicas', NAME)) as string[][];
        return replicas.some(
          (fields) => !/s_down|disconnected/.test(fields[fields.indexOf('flags') + 1] ?? ''),
        );
      }, 'Sentinel knows the replica').catch(async (error: unknown) => {
        await group.stop();
        throw error;
      });
      return group;
    } catch (error) {
      await stopAll();
      throw error;
    }
  }

  /** The master's port as the Sentinel names it (the link's port until a failover). */
  async currentMasterPort(): Promise<number> {
    const [, port] = (await this.ask('get-master-addr-by-name', NAME)) as [string, string];
    return Number(port);
  }

  /** Resolves once the Sentinel has promoted the replica. */
  async failedOver(): Promise<void> {
    await until(async () => (await this.currentMasterPort()) === this.replica.port, 'failover', 60_000);
  }

  async ask(...args: string[]): Promise<unknown> {
    const sentinel = new Redis(this.sentinelPort, '127.0.0.1', { maxRetriesPerRequest: 1 });
    sentinel.on('error', () => undefined); // a failed call rejects: that is enough
    try {
      return await sentinel.call('SENTINEL', ...args);
    } finally {
      sentinel.disconnect();
    }
  }

  async stop(): Promise<void> {
    this.sentinel.kill('SIGKILL');
    await this.sentinelExited;
    await Promise.all([this.master.stop(), this.replica.stop(), this.link.stop()]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export async function info(url: string, section: string): Promise<string> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined); // a failed call rejects: that is enough
  try {
    return await redis.info(section);
  } finally {
    redis.disconnect();
  }
}

/**
 * Polls `condition` (the servers decide in their own time) until it holds, or fails after `timeoutMs`.
 * A probe that fails (a connection refused or reset while a server changes its role, on a loaded
 * machine) is "not yet", not the answer; the last such error is named if time runs out.
 */
export async function until(
  condition: () => Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let failed: unknown;
  for (;;) {
    try {
      if (await condition()) return;
      failed = undefined;
    } catch (error) {
      failed = error;
    }
    if (performance.now() > deadline) {
      const why = failed === undefined ? '' : ` (last probe failed: ${(failed as Error).message})`;
      throw new Error(`${what}: not within ${timeoutMs} ms${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
