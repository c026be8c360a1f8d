import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisCluster, RedisServer } from '@lockstock/servers';
import { checkLockHistory } from '../../src/checker/index.js';
import { RedisFencedStore, RedisLockClient } from '../../src/index.js';
import { reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedis } from '../helpers/redis.js';

const resource = useRedis(); // the fenced resource: a Redis of its own, outside the cluster

/**
 * Fault row "Redis Cluster failover" (RELIABILITY.md §3, row 4's Cluster twin): a 3-master Cluster
 * with a replica for the master that serves the lock's slot. The replica's link to its master is cut
 * first (it cannot authenticate any more, so it does not resync) — asynchronous replication's window,
 * held open — then client A takes the lock on the master, the master is SIGKILLed, and the replica is
 * promoted (CLUSTER FAILOVER TAKEOVER: what the cluster's own election does once the master is
 * timed out). Client B takes the same lock on the new master, which never saw A's. Both believe they
 * hold it, and the fencing counter (on the same slot) hands out A's token again. Unsafe by design
 * without fencing: the test asserts the checker FINDS the two holders and the re-issued token, and
 * that the fenced resource's (token, owner) rule accepted nothing stale.
 */
let cluster: RedisCluster;
let replica: RedisServer;
const connections: Array<Redis | Cluster> = [];
const admin = (url: string) => {
  const made = new Redis(url, { maxRetriesPerRequest: 1 });
  made.on('error', () => undefined); // the killed master's
  connections.push(made);
  return made;
};
const field = (info: string, name: string) => new RegExp(`${name}:(\\S+)`).exec(info)?.[1];

beforeAll(async () => {
  cluster = await RedisCluster.start({ masters: 3 });
  replica = await RedisServer.start({
    args: [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      'nodes.conf',
      '--cluster-node-timeout',
      '2000',
    ],
  });
});
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await Promise.all([cluster?.stop(), replica?.stop()]);
});

/** The node id and server of the master serving `slot`, from CLUSTER NODES. */
async function masterOf(slot: number): Promise<{ id: string; server: RedisServer }> {
  const lines = ((await admin(cluster.nodes[0]!.url).call('CLUSTER', 'NODES')) as string).trim().split('\n');
  for (const line of lines) {
    const [id, address, flags, , , , , , ...slots] = line.split(' ');
    if (!flags!.includes('master')) continue;
    const serves = slots.some((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return slot >= from! && slot <= to!;
    });
    if (!serves) continue;
    const port = Number(address!.split(':')[1]!.split('@')[0]);
    return { id: id!, server: cluster.nodes.find((n) => n.port === port)! };
  }
  throw new Error(`no master serves slot ${slot}`);
}

describe('fault: Redis Cluster failover', () => {
  it(
    'the master SIGKILLed and its replica promoted under a held lock: two holders and a re-issued token, found; the fence held',
    { timeout: 120_000 },
    async () => {
      const name = 'cluster-failover';
      const first = admin(cluster.nodes[0]!.url);
      const slot = Number(await first.call('CLUSTER', 'KEYSLOT', name));
      const master = await masterOf(slot);
      const r = admin(replica.url);
      await first.call('CLUSTER', 'MEET', replica.host, String(replica.port));
      await expect
        .poll(async () => field((await r.call('CLUSTER', 'INFO')) as string, 'cluster_known_nodes'), {
          timeout: 20_000,
        })
        .toBe('4');
      await r.call('CLUSTER', 'REPLICATE', master.id);
      await expect
        .poll(async () => field(await r.info('replication'), 'master_link_status'), { timeout: 20_000 })
        .toBe('up');

      const clientOf = (nodes: ReadonlyArray<{ host: string; port: number }>) => {
        const redis = new Cluster(nodes.map((n) => ({ host: n.host, port: n.port })));
        redis.on('error', () => undefined); // the killed master
        connections.push(redis);
        return new RedisLockClient({ redis, watchdogTimeoutMs: 30_000 });
      };
      const a = clientOf(cluster.nodes);
      const history = new HistoryRecorder();
      const store = new RedisFencedStore(resource.redis);
      let b: RedisLockClient | undefined;
      try {
        // Before the fault: the lock was used once, and the replica has it all (the counter included).
        await (await a.mutex(name).acquire()).release();
        const m = admin(master.server.url);
        expect(await m.wait(1, 5_000)).toBe(1);

        // The replication link breaks and stays broken: the replica cannot authenticate to resync.
        await r.config('SET', 'masterauth', 'not-the-password');
        await r.call('CLIENT', 'KILL', 'TYPE', 'master');
        await expect.poll(async () => field(await r.info('replication'), 'master_link_status')).toBe('down');
        history.fault('replication-cut');
        const held = await history.acquire('A', name, () =>
          a.mutex(name).acquire({ owner: 'A', leaseMs: 20_000 }),
        );
        history.watch('A', name, held);
        expect(field(await r.info('replication'), 'master_link_status')).toBe('down'); // A's grant never left M
        const lockKeys = (await m.keys('*')).filter((key) => key.includes(`{${name}}`));

        history.fault('kill', 'master');
        await master.server.kill();
        const killedAt = performance.now();
        await r.call('CLUSTER', 'FAILOVER', 'TAKEOVER');
        await expect
          .poll(async () => ((await r.call('ROLE')) as [string])[0], { timeout: 20_000 })
          .toBe('master');
        // The new master has the counter from before A's grant, and no lock key of A's.
        const lockKeysThere = await Promise.all(lockKeys.map((key) => r.exists(key)));
        const live = cluster.nodes.filter((n) => n !== master.server);
        b = clientOf([...live, replica]);
        const second = await history.acquire('B', name, () =>
          b!.mutex(name).acquire({ owner: 'B', waitMs: 20_000 }),
        );
        const takenAfterMs = performance.now() - killedAt;
        history.watch('B', name, second);
        expect(held.signal.aborted).toBe(false); // A still believes: its 20 s lease runs
        expect(second.fencingToken).toBe(held.fencingToken); // A's increment was lost with the master

        expect(await history.write(store, name, 'B', second)).toBe(true);
        expect(await history.write(store, name, 'A', held)).toBe(false); // equal token, another owner
        expect(await store.read(name)).toBe('B');
        await history.release('B', name, second);
        await history.release('A', name, held);

        const report = checkLockHistory(history.events);
        expect(report.checks.exclusion.valid).toBe(false);
        expect(report.checks.exclusion.violations[0]?.owners).toEqual(['A', 'B']);
        expect(report.checks.tokens.valid).toBe(false); // the token was handed out twice
        expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
        reportRow({
          row: 'cluster-failover',
          backend: 'cluster',
          fault:
            "the master serving the lock's slot SIGKILLed under a held lock and its replica promoted (CLUSTER FAILOVER TAKEOVER), the replication link cut just before the grant (asynchronous replication's window, held open)",
          expected: ['VIOL', 'F-OK'],
          observed: `the promoted replica had ${lockKeysThere.filter((n) => n === 1).length} of the ${lockKeys.length} keys of the lock's slot as A's grant left them (not A's hold); B got the lock there ${Math.round(takenAfterMs)} ms after the kill while A's lease ran, with A's token again (${second.fencingToken}) — the checker found the overlap and the re-issued token; the fenced resource refused A's equal token from another owner and accepted nothing stale`,
          file: 'test/faults/cluster-failover.test.ts',
          checker: report,
          figures: { takenAfterMs: Math.round(takenAfterMs) },
        });
      } finally {
        await a.close();
        await b?.close();
      }
    },
  );
});
