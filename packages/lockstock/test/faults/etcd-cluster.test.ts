import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdCluster, httpRequest, type EtcdServer } from '@lockstock/servers';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { EtcdLockClient } from '../../src/etcd/index.js';
import { ETCD_ONE_SECOND_LEASES } from '../contract/backends.js';
import { mergeHistories, msSince, useFixtures, type LossReport } from '../helpers/crash.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { minorityPartitionRow } from '../helpers/minority-partition.js';
import { HistoryRecorder } from '../helpers/recorder.js';

/**
 * Fault row "leader lost" on a 3-member etcd cluster (RELIABILITY.md §3, column ET): a holder process
 * (fixtures/fault-holder.mjs) holds a mutex on its session lease, a client of this process waits for
 * it, and the cluster's leader is SIGKILLed. The two survivors are a majority: they elect a leader, and
 * a new leader gives every lease its full TTL again (etcd's lessor "promote") — so a session whose
 * keep-alives reach a survivor must survive: its key, its token; nobody else may get the lock meanwhile;
 * its guarded write after the election (etcd's own fence, `CreateRevision(lock key) == token`) is
 * accepted. A hold that could not be kept must be reported lost — never granted twice (lockstock/checker,
 * strict, on the merged history): the second row gives the holder the leader as its only endpoint, so
 * the kill cuts it off from the cluster — its session must be reported lost (no keep-alive answered
 * within the TTL, less drift) before the survivors' leader expires the lease and the waiter has the
 * lock. (Its late writes cannot reach etcd at all: its one endpoint is dead.)
 */
const FILE = 'test/faults/etcd-cluster.test.ts';
/** The sessions' TTL: an election on a loaded machine is well inside it. */
const TTL_SECONDS = 10;
const TRIALS = fullFaultSuite() ? 3 : 1;

let cluster: EtcdCluster;
let admin: Etcd3;
const clients: EtcdLockClient[] = [];
const fixtures = useFixtures();
let unique = 0;

beforeAll(async () => {
  cluster = await EtcdCluster.start({ members: 3, args: ETCD_ONE_SECOND_LEASES });
  admin = new Etcd3({ hosts: cluster.endpoints });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin?.close();
  await cluster?.stop();
});

const eventsOf = (owner: unknown): HistoryEvent[] =>
  fixtures.histories().filter((e) => e.proc === owner || e.owner === owner);

/** The keys queued for the mutex `name`, as etcd has them. */
const queue = (name: string) =>
  admin
    .getAll()
    .prefix(`ls/${encodeURIComponent(name)}/mutex/`)
    .keys();

/** The member that leads, as the running members' status says (undefined while none does). */
async function leaderOf(members: readonly EtcdServer[]): Promise<EtcdServer | undefined> {
  for (const member of members.filter((m) => m.running)) {
    try {
      const answer = await httpRequest(`${member.endpoint}/v3/maintenance/status`, {
        method: 'POST',
        body: {},
      });
      const status = JSON.parse(answer.body) as { header?: { member_id?: string }; leader?: string };
      if (status.leader && status.leader !== '0' && status.header?.member_id === status.leader) return member;
    } catch {
      // down or electing: ask the next
    }
  }
  return undefined;
}

describe('lock faults on an etcd cluster', () => {
  it('the leader SIGKILLed under a holder and a waiter: the hold survives on the majority, nobody else gets the lock meanwhile', async () => {
    const recorder = new HistoryRecorder();
    const elections: number[] = [];
    const owners: string[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const name = `fault-leader-${process.pid}-${++unique}`;
      const holding = fixtures.fork('fault-holder.mjs', {
        kind: 'etcd',
        hosts: cluster.endpoints,
        sessionTtlSeconds: TTL_SECONDS,
        name,
        watch: true,
        history: fixtures.historyFile(name),
      });
      const { token, owner } = await holding.next('holding');
      owners.push(owner as string);
      const waiter = new EtcdLockClient({ hosts: cluster.endpoints, sessionTtlSeconds: TTL_SECONDS });
      clients.push(waiter);
      let settled = false;
      const waiting = recorder.acquire(`waiter-${name}`, name, () =>
        waiter.mutex(name).acquire({ owner: `waiter-${trial}`, waitMs: 60_000 }),
      );
      void waiting.then(
        () => (settled = true),
        () => (settled = true),
      );
      await expect.poll(() => queue(name)).toHaveLength(2);

      const leader = await leaderOf(cluster.members);
      expect(leader).toBeDefined();
      recorder.fault('kill-leader', `etcd-${leader!.name}`);
      const killedAt = process.hrtime.bigint();
      await leader!.kill();
      await expect.poll(() => leaderOf(cluster.members), { timeout: 30_000, interval: 100 }).toBeDefined();
      elections.push(msSince(killedAt));

      holding.send({ type: 'write', value: 'after the election' });
      const written = await holding.next('written');
      expect(settled).toBe(false); // nobody else got the lock while it held
      holding.send({ type: 'release' });
      const released = await holding.next('released');
      const next = await waiting;
      expect(written).toMatchObject({ accepted: true, signalAborted: false }); // the hold survived
      expect(released).toMatchObject({ outcome: 'released' });
      expect(released.lost).toBeUndefined();
      expect(next.fencingToken).toBeGreaterThan(token as number);
      recorder.resourceAnswered(
        `fenced/${name}`,
        await waiter.guardedPut(next, `fenced/${name}`, 'from the waiter'),
        next,
      );
      await recorder.release(`waiter-${name}`, name, next);
      await leader!.restart(); // back as a follower for the next trial, and the next test
    }
    const report = checkLockHistory(mergeHistories(recorder.events, ...owners.map(eventsOf)), {
      strict: true,
    });
    expect(report.valid).toBe(true);
    expect(report.checks.fence).toMatchObject({ acceptedStale: 0, rejectedStale: 0 });
    reportRow({
      row: 'leader-lost',
      backend: 'etcd',
      fault: `the leader of a 3-member cluster SIGKILLed while a holder process (session TTL ${TTL_SECONDS} s, every member in its hosts) holds a mutex and another client waits (${TRIALS} time${TRIALS > 1 ? 's' : ''})`,
      expected: ['OK'],
      observed: `the two survivors had a leader ${elections.map((ms) => `${Math.round(ms)} ms`).join(', ')} after the kill; the holder's session lease and key survived — its signal never aborted, its guarded write after the election was accepted, its release released — and the waiter got the lock only then, with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { electionMsMax: Math.round(Math.max(...elections)), ttlSeconds: TTL_SECONDS },
    });
  });

  it('the leader SIGKILLed while it is the holder’s only endpoint: the hold is reported lost before the waiter has the lock', async () => {
    const ttl = 2;
    const name = `fault-leader-only-${process.pid}-${++unique}`;
    const leader = await leaderOf(cluster.members);
    expect(leader).toBeDefined();
    const holding = fixtures.fork('fault-holder.mjs', {
      kind: 'etcd',
      hosts: [leader!.endpoint],
      sessionTtlSeconds: ttl,
      name,
      watch: true,
      history: fixtures.historyFile(name),
    });
    const { token, owner } = await holding.next('holding');
    const others = cluster.members.filter((m) => m !== leader).map((m) => m.endpoint);
    const waiter = new EtcdLockClient({ hosts: others, sessionTtlSeconds: 10 });
    clients.push(waiter);
    const recorder = new HistoryRecorder();
    const waiting = recorder.acquire('second', name, () =>
      waiter.mutex(name).acquire({ owner: 'second', waitMs: 60_000 }),
    );
    await expect.poll(() => queue(name)).toHaveLength(2);
    recorder.fault('kill-leader', `etcd-${leader!.name}`);
    const killedAt = process.hrtime.bigint();
    await leader!.kill();
    const second = await waiting;
    const takenAfterMs = msSince(killedAt);
    expect(second.fencingToken).toBeGreaterThan(token as number);
    recorder.resourceAnswered(
      `fenced/${name}`,
      await waiter.guardedPut(second, `fenced/${name}`, 'from second'),
      second,
    );
    holding.send({ type: 'release' });
    const released = await holding.next('released');
    await recorder.release('second', name, second);
    const lost = released.lost as LossReport;
    expect(lost.reason).toBe('session_lost');
    const lostAfterMs = Number(BigInt(lost.at) - killedAt) / 1e6;
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.valid).toBe(true); // the holder was told before the waiter had the lock
    expect(report.checks.fence).toMatchObject({ acceptedStale: 0, rejectedStale: 0 });
    reportRow({
      row: 'leader-lost-holder-cut-off',
      backend: 'etcd',
      fault: `the leader of a 3-member cluster SIGKILLed while it is the only endpoint of a holder process (session TTL ${ttl} s) and another client, on the two others, waits`,
      expected: ['OK'],
      observed: `the holder, cut off, reported its session lost ${Math.round(lostAfterMs)} ms after the kill (no keep-alive answered within the TTL); the survivors' leader expired the lease and the waiter had the lock ${Math.round(takenAfterMs)} ms after the kill, with a greater token — after the holder was told; its release said ${String(released.outcome)}; no overlap of what the clients were told`,
      file: FILE,
      checker: report,
      figures: {
        lostAfterMs: Math.round(lostAfterMs),
        takenAfterMs: Math.round(takenAfterMs),
        ttlSeconds: ttl,
      },
    });
  });
});

/**
 * Fault row "partitioned into a minority" (issue 35): the cluster's peer links run through proxies
 * (EtcdCluster `partitionable`, @lockstock/servers' PeerNetwork), and the member that is a holder's
 * only endpoint — a follower — is cut off from the two others, both ways; the processes keep running.
 * The holder's keep-alives reach its member but no leader (the lease lives on the majority's leader):
 * its session must be reported lost (its signal aborts) before the majority expires the lease and a
 * client on the majority is granted — with a greater fencing token — and once the links are healed the
 * cut-off member serves the lock again: a client on it alone takes it after the waiter's release.
 */
describe('a partition on an etcd cluster', () => {
  let partitioned: EtcdCluster;
  beforeAll(async () => {
    partitioned = await EtcdCluster.start({ members: 3, args: ETCD_ONE_SECOND_LEASES, partitionable: true });
  });
  afterAll(async () => {
    await partitioned?.stop();
  });

  it('the holder’s member cut off into a minority: the hold is reported lost before a majority client has the lock; the lock is live again after healing', async () => {
    const ttl = 2;
    const name = `fault-minority-${process.pid}-${++unique}`;
    const leader = await leaderOf(partitioned.members);
    expect(leader).toBeDefined();
    const cutOff = partitioned.members.find((m) => m !== leader)!;
    const majority = partitioned.members.filter((m) => m !== cutOff).map((m) => m.endpoint);
    const waiter = new EtcdLockClient({ hosts: majority, sessionTtlSeconds: 10 });
    clients.push(waiter);
    const { report, lostAfterMs, takenAfterMs, liveAfterMs } = await minorityPartitionRow({
      name,
      holder: fixtures.fork('fault-holder.mjs', {
        kind: 'etcd',
        hosts: [cutOff.endpoint],
        sessionTtlSeconds: ttl,
        name,
        watch: true,
        history: fixtures.historyFile(name),
      }),
      waiter,
      waitMs: 60_000,
      queued: async () => {
        const watcher = new Etcd3({ hosts: majority });
        try {
          await expect
            .poll(() =>
              watcher
                .getAll()
                .prefix(`ls/${encodeURIComponent(name)}/mutex/`)
                .keys(),
            )
            .toHaveLength(2);
        } finally {
          watcher.close();
        }
      },
      member: `etcd-${cutOff.name}`,
      isolate: () => partitioned.network!.isolate(cutOff.name),
      fencedWrite: (handle) => waiter.guardedPut(handle, `fenced/${name}`, 'from the majority'),
      heal: async () => partitioned.network!.heal(),
      rejoined: () => {
        const client = new EtcdLockClient({ hosts: [cutOff.endpoint], sessionTtlSeconds: 10 });
        clients.push(client);
        return client;
      },
      eventsOf,
    });
    expect(report.checks.fence).toMatchObject({ rejectedStale: 0 });
    reportRow({
      row: 'partition-minority',
      backend: 'etcd',
      fault: `the follower that is a holder process's only endpoint (session TTL ${ttl} s) cut off from the two other members of a 3-member cluster (its peer links black-holed by proxies, both ways), while a client on the two others waits; then healed`,
      expected: ['OK'],
      observed: `the holder reported its session lost ${Math.round(lostAfterMs)} ms after the cut (its member had no leader to renew the lease with); the majority expired the lease and its client had the lock ${Math.round(takenAfterMs)} ms after the cut, with a greater token — after the holder was told; after healing, a client on the cut-off member alone had the lock ${Math.round(liveAfterMs)} ms after the heal, with a greater token still; no overlap of what the clients were told`,
      file: FILE,
      checker: report,
      figures: {
        lostAfterMs: Math.round(lostAfterMs),
        takenAfterMs: Math.round(takenAfterMs),
        liveAfterHealMs: Math.round(liveAfterMs),
        ttlSeconds: ttl,
      },
    });
  });
});
