import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisCluster, RedisServer } from '@lockstock/servers';
import { RedisLockClient } from '../../src/index.js';
import { useFixtures } from '../helpers/crash.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { killHolders, shownMs } from '../helpers/killed-holder.js';
import { pausePastLease } from '../helpers/paused-holder.js';

/**
 * Fault rows on Redis holders. "Holder killed" (RELIABILITY.md §3.2 row 1), one server and a 3-master
 * Cluster: a
 * holder process (fixtures/fault-holder.mjs) holds a mutex whose lease its watchdog renews, and is
 * SIGKILLed while a client of this process waits. Nothing releases the lock: it must pass on when the
 * dead holder's last renewed lease runs out — within the watchdog timeout plus slack for a loaded
 * machine — to the waiter, with a greater token; lockstock/checker reads the merged history.
 * "Holder paused" (row 2) on the Cluster (the one server's is test/faults/paused-holder.test.ts): the
 * holder SIGSTOPped past its lease, another client takes the lock, the holder resumes and writes — two
 * holders, which the checker must find, and a fence (RedisFencedStore on the one server) that refuses
 * the stale write.
 */
const FILE = 'test/faults/redis-holder-faults.test.ts';
/** The holder's watchdog timeout, its lease. */
const LEASE_MS = 1_000;
/** The waiter retries when the holder's remaining lease ends; a loaded machine answers late. */
const SLACK_MS = 2_000;
const TRIALS = fullFaultSuite() ? 5 : 1;

let server: RedisServer;
let cluster: RedisCluster;
const clients: RedisLockClient[] = [];
const connections: Cluster[] = [];
const fixtures = useFixtures();
let unique = 0;
const lockName = (label: string) => `fault-${label}-${process.pid}-${++unique}`;

beforeAll(async () => {
  [server, cluster] = await Promise.all([RedisServer.start(), RedisCluster.start({ masters: 3 })]);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  connections.forEach((c) => c.disconnect());
  await Promise.all([server?.stop(), cluster?.stop()]);
});

function redisClient(): RedisLockClient {
  const client = new RedisLockClient({ redis: server.url });
  clients.push(client);
  return client;
}
function clusterClient(): RedisLockClient {
  const connection = new Cluster(cluster.startupNodes);
  connections.push(connection);
  const client = new RedisLockClient({ redis: connection });
  clients.push(client);
  return client;
}

describe('lock faults on Redis: holder killed', () => {
  it('one server: a SIGKILLed holder’s lock passes on when its last renewed lease ends, no overlap', async () => {
    const waiters = redisClient();
    const { freedAfterMs, report } = await killHolders({
      fixtures,
      trials: TRIALS,
      lockName: () => lockName('killed'),
      holderArgs: (name) => ({
        kind: 'contract',
        backend: { kind: 'redis', url: server.url, watchdogTimeoutMs: LEASE_MS },
        name,
        history: fixtures.historyFile(name),
      }),
      take: (name) => waiters.mutex(name).acquire({ waitMs: LEASE_MS + 10_000 }),
      // The lock is still the dead-to-be holder's as the kill comes (the waiter asks meanwhile).
      queued: async (name) => expect(await redisClient().mutex(name).isLocked()).toBe(true),
      boundMs: LEASE_MS + SLACK_MS,
    });
    reportRow({
      row: 'holder-killed',
      backend: 'redis',
      fault: `a holder process (watchdog lease ${LEASE_MS} ms) SIGKILLed while a client of another process waits (${TRIALS} time${TRIALS > 1 ? 's' : ''})`,
      expected: ['OK', 'LIVE'],
      observed: `nothing released the lock: it passed on when the dead holder's last renewed lease ran out, ${shownMs(freedAfterMs)} after the kill (bound: the lease + ${SLACK_MS} ms), with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { leaseMs: LEASE_MS, freedAfterMsMax: Math.round(Math.max(...freedAfterMs)) },
    });
  });

  it('3-master Cluster: a SIGKILLed holder’s lock passes on when its last renewed lease ends, no overlap', async () => {
    const waiters = clusterClient();
    const { freedAfterMs, report } = await killHolders({
      fixtures,
      trials: TRIALS,
      lockName: () => lockName('killed-cluster'),
      holderArgs: (name) => ({
        kind: 'contract',
        backend: { kind: 'redis-cluster', nodes: cluster.startupNodes, watchdogTimeoutMs: LEASE_MS },
        name,
        history: fixtures.historyFile(name),
      }),
      take: (name) => waiters.mutex(name).acquire({ waitMs: LEASE_MS + 10_000 }),
      queued: async (name) => expect(await waiters.mutex(name).isLocked()).toBe(true),
      boundMs: LEASE_MS + SLACK_MS,
    });
    reportRow({
      row: 'holder-killed',
      backend: 'cluster',
      fault: `a holder process (watchdog lease ${LEASE_MS} ms) on a 3-master Redis Cluster SIGKILLed while a client of another process waits (${TRIALS} time${TRIALS > 1 ? 's' : ''})`,
      expected: ['OK', 'LIVE'],
      observed: `the lock's master expired the dead holder's last renewed lease and the waiter had the lock ${shownMs(freedAfterMs)} after the kill (bound: the lease + ${SLACK_MS} ms), with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { leaseMs: LEASE_MS, freedAfterMsMax: Math.round(Math.max(...freedAfterMs)) },
    });
  });

  it('3-master Cluster: a holder SIGSTOPped past its lease — two holders (found), the fence refuses the stale write', async () => {
    const waiters = clusterClient();
    const { report, takenAfterMs, seen } = await pausePastLease({
      fixtures,
      name: lockName('paused-cluster'),
      backend: { kind: 'redis-cluster', nodes: cluster.startupNodes, watchdogTimeoutMs: LEASE_MS },
      resourceUrl: server.url,
      take: (name) => waiters.mutex(name).acquire({ owner: 'second', waitMs: LEASE_MS + 10_000 }),
    });
    reportRow({
      row: 'holder-paused',
      backend: 'cluster',
      fault: `a holder process on a 3-master Redis Cluster SIGSTOPped past its ${LEASE_MS} ms watchdog lease; another client takes the lock; the holder resumes (SIGCONT) and writes without looking at its signal`,
      expected: ['VIOL', 'F-OK'],
      observed: `the other client got the lock ${Math.round(takenAfterMs)} ms after the stop (the lease ran out on the lock's master); once resumed, ${seen.words}, and it wrote: two holders, found by the checker; the fenced store refused its stale write, the unfenced list took it`,
      file: FILE,
      checker: report,
      figures: {
        takenAfterMs: Math.round(takenAfterMs),
        ...(seen.ms === undefined ? {} : { abortedAfterResumeMs: Math.round(seen.ms) }),
      },
    });
  });
});
