import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisSentinelGroup, RedisServer } from '@lockstock/servers';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { RedisLockClient } from '../../src/index.js';
import { mergeHistories, msSince, useFixtures } from '../helpers/crash.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { killHolders, shownMs } from '../helpers/killed-holder.js';
import { pausePastLease } from '../helpers/paused-holder.js';
import { HistoryRecorder } from '../helpers/recorder.js';

/**
 * Fault rows on Redis behind Sentinel (a master, a replica, one Sentinel; clients find the master
 * through the Sentinel): a holder process (fixtures/fault-holder.mjs) SIGKILLed (row 1), SIGSTOPped
 * past its lease (row 2), and the master SIGKILLed under a held lock once the replica has the lock's
 * keys (WAIT 1), the Sentinel promoting the replica: the hold must survive — the holder's client
 * follows the Sentinel to the new master, where its keys are — and nobody else may get the lock meanwhile (a waiter's acquire may fail with a typed
 * error while the master is gone; it asks again). (With the replication link cut before the
 * grant, the promoted replica never had the hold: test/faults/sentinel-split-brain.test.ts.)
 */
const FILE = 'test/faults/sentinel-holder-faults.test.ts';
const LEASE_MS = 1_000;
/** The failover row's lease: a Sentinel failover on a loaded machine takes a few seconds. */
const FAILOVER_LEASE_MS = 10_000;
const SLACK_MS = 2_000;
const TRIALS = fullFaultSuite() ? 5 : 1;

let group: RedisSentinelGroup;
let resources: RedisServer;
const clients: RedisLockClient[] = [];
const fixtures = useFixtures();
let unique = 0;
const lockName = (label: string) => `fault-${label}-${process.pid}-${++unique}`;
const viaSentinel = () => ({ sentinels: group.sentinels, name: group.masterName });

beforeAll(async () => {
  [group, resources] = await Promise.all([RedisSentinelGroup.start(), RedisServer.start()]);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all([group?.stop(), resources?.stop()]);
});

function client(): RedisLockClient {
  const made = new RedisLockClient({ redis: viaSentinel() });
  made.on('connectionError', () => undefined); // the failover row kills the master
  clients.push(made);
  return made;
}

describe('lock faults on Redis with Sentinel', () => {
  it('a SIGKILLed holder’s lock passes on when its last renewed lease ends, no overlap', async () => {
    const waiters = client();
    const { freedAfterMs, report } = await killHolders({
      fixtures,
      trials: TRIALS,
      lockName: () => lockName('killed-sentinel'),
      holderArgs: (name) => ({
        kind: 'contract',
        backend: { kind: 'redis', url: viaSentinel(), watchdogTimeoutMs: LEASE_MS },
        name,
        history: fixtures.historyFile(name),
      }),
      take: (name) => waiters.mutex(name).acquire({ waitMs: LEASE_MS + 10_000 }),
      boundMs: LEASE_MS + SLACK_MS,
    });
    reportRow({
      row: 'holder-killed',
      backend: 'sentinel',
      fault: `a holder process (watchdog lease ${LEASE_MS} ms, the master found through Sentinel) SIGKILLed while a client of another process waits (${TRIALS} time${TRIALS > 1 ? 's' : ''})`,
      expected: ['OK', 'LIVE'],
      observed: `nothing released the lock: it passed on when the dead holder's last renewed lease ran out, ${shownMs(freedAfterMs)} after the kill (bound: the lease + ${SLACK_MS} ms), with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { leaseMs: LEASE_MS, freedAfterMsMax: Math.round(Math.max(...freedAfterMs)) },
    });
  });

  it('a holder SIGSTOPped past its lease: two holders (found), the fence refuses the stale write', async () => {
    const waiters = client();
    const { report, takenAfterMs, seen } = await pausePastLease({
      fixtures,
      name: lockName('paused-sentinel'),
      backend: { kind: 'redis', url: viaSentinel(), watchdogTimeoutMs: LEASE_MS },
      resourceUrl: resources.url,
      take: (name) => waiters.mutex(name).acquire({ owner: 'second', waitMs: LEASE_MS + 10_000 }),
    });
    reportRow({
      row: 'holder-paused',
      backend: 'sentinel',
      fault: `a holder process SIGSTOPped past its ${LEASE_MS} ms watchdog lease; another client takes the lock; the holder resumes (SIGCONT) and writes without looking at its signal`,
      expected: ['VIOL', 'F-OK'],
      observed: `the other client got the lock ${Math.round(takenAfterMs)} ms after the stop (the lease ran out on the master); once resumed, ${seen.words}, and it wrote: two holders, found by the checker; the fenced store refused its stale write, the unfenced list took it`,
      file: FILE,
      checker: report,
      figures: {
        takenAfterMs: Math.round(takenAfterMs),
        ...(seen.ms === undefined ? {} : { abortedAfterResumeMs: Math.round(seen.ms) }),
      },
    });
  });

  // Last: it leaves the group without its old master.
  it('the master SIGKILLed under a replicated hold, the replica promoted: the hold survives, nobody else gets the lock meanwhile', async () => {
    const name = lockName('failover-sentinel');
    const holding = fixtures.fork('fault-holder.mjs', {
      kind: 'contract',
      backend: { kind: 'redis', url: viaSentinel(), watchdogTimeoutMs: FAILOVER_LEASE_MS },
      resourceUrl: resources.url,
      name,
      watch: true,
      history: fixtures.historyFile(name),
    });
    const { token, owner } = await holding.next('holding');
    const recorder = new HistoryRecorder();
    const waiters = client();
    let settled = false;
    let waiterFailed: string | undefined;
    const wait = () => {
      settled = false;
      const waiting = recorder.acquire('second', name, () =>
        waiters.mutex(name).acquire({ owner: 'second', waitMs: 60_000 }),
      );
      void waiting.then(
        () => (settled = true),
        (error: Error) => {
          settled = true;
          waiterFailed ??= error.name;
        },
      );
      return waiting;
    };
    let waiting = wait();
    const master = new Redis(group.master.url);
    const sentinel = new Redis({ host: '127.0.0.1', port: group.sentinelPort });
    try {
      expect(await master.wait(1, 5_000)).toBe(1); // the replica has every write so far, the hold's keys too
      const oldPort = group.master.port;
      recorder.fault('kill-master', `redis-${oldPort}`);
      const killedAt = process.hrtime.bigint();
      master.disconnect();
      await group.master.kill();
      const promoted = async () =>
        Number(
          ((await sentinel.call('SENTINEL', 'get-master-addr-by-name', group.masterName)) as string[])[1],
        );
      await expect.poll(promoted, { timeout: 30_000, interval: 100 }).not.toBe(oldPort);
      const failoverMs = msSince(killedAt);
      // A waiter's acquire may fail while the master is gone (a typed error: the master it asked is
      // unreachable): it asks again, as a caller would.
      if (waiterFailed) waiting = wait();

      holding.send({ type: 'write', value: 'after the failover' });
      const written = await holding.next('written');
      expect(settled).toBe(false); // nobody else got the lock while it held
      holding.send({ type: 'release' });
      const released = await holding.next('released');
      const next = await waiting;
      expect(written).toMatchObject({ accepted: true, signalAborted: false }); // the hold survived
      expect(released).toMatchObject({ outcome: 'released' });
      expect(released.lost).toBeUndefined();
      expect(next.fencingToken).toBeGreaterThan(token as number);
      await recorder.release('second', name, next);
      const events: HistoryEvent[] = fixtures
        .histories()
        .filter((e) => e.proc === owner || e.owner === owner);
      const report = checkLockHistory(mergeHistories(recorder.events, events), { strict: true });
      expect(report.valid).toBe(true);
      reportRow({
        row: 'leader-lost',
        backend: 'sentinel',
        fault: `the master SIGKILLed under a hold (watchdog lease ${FAILOVER_LEASE_MS / 1_000} s) its replica had acknowledged (WAIT 1), another client waiting; Sentinel promotes the replica`,
        expected: ['OK'],
        observed: `the Sentinel named the promoted replica ${Math.round(failoverMs)} ms after the kill; the hold survived on it — the replica had its keys, the holder's client found the new master, its signal never aborted, its fenced write after the failover was accepted, its release released there — and the waiter got the lock only then, with a greater token${waiterFailed ? ` (its first acquire failed with ${waiterFailed} as the master went; it asked again after the failover)` : ''}; no overlap`,
        file: FILE,
        checker: report,
        figures: { failoverMs: Math.round(failoverMs), leaseMs: FAILOVER_LEASE_MS },
      });
    } finally {
      master.disconnect();
      sentinel.disconnect();
    }
  });
});
