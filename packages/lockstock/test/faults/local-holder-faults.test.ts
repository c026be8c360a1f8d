import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '@lockstock/servers';
import { checkLockHistory } from '../../src/checker/index.js';
import { LockLostError, RedisFencedStore } from '../../src/index.js';
import { LocalLockClient } from '../../src/local/index.js';
import { msSince } from '../helpers/crash.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { shownMs } from '../helpers/killed-holder.js';
import { HistoryRecorder } from '../helpers/recorder.js';

/**
 * Fault row "holder killed" (RELIABILITY.md §3.2 row 1) on the local (in-process) backend. Its locks
 * live in one process and protect nothing across processes, so a SIGKILLed process takes its locks —
 * and every waiter — with it: there is no other process to hand them to, and the row across processes
 * does not apply. What applies is the holder's owner dying inside the process: its client abandoned
 * without a release (close() with the hold open, as a worker whose task crashed and whose client went
 * away). close() stops the client's renewals; the hold must end with its lease, and a waiter of
 * another client of the namespace must get the lock then, with a greater token.
 *
 * Fault row "holder paused" (row 2) in-process: the holder's task blocks the event loop (Atomics.wait:
 * a GC pause, a long synchronous computation) past its lease while a client of the namespace waits.
 * Everything in the process stops with it — the waiter too — but the lease is measured on the
 * monotonic clock: once the loop runs again the lease is over, the waiter is granted, and the holder,
 * continuing after one await without looking at its signal, writes. Two holders, which the checker
 * must find (strict: how long they acted); the fence (a RedisFencedStore on a Redis of its own) must
 * refuse the stale write.
 */
const FILE = 'test/faults/local-holder-faults.test.ts';
const LEASE_MS = 500;
const SLACK_MS = 1_500;
const TRIALS = fullFaultSuite() ? 10 : 2;

const clients: LocalLockClient[] = [];
function client(namespace: string): LocalLockClient {
  const made = new LocalLockClient({ namespace, watchdogTimeoutMs: LEASE_MS });
  clients.push(made);
  return made;
}
let resources: RedisServer;
let redis: Redis;
beforeAll(async () => {
  resources = await RedisServer.start();
  redis = new Redis(resources.url);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  redis?.disconnect();
  await resources?.stop();
});

describe('lock faults on the local backend: holder killed, holder paused', () => {
  it('a holder client abandoned without a release: the lock passes on when its lease ends, no overlap', async () => {
    const recorder = new HistoryRecorder();
    const freed: number[] = [];
    const signalAborted: boolean[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const namespace = `fault-killed-${process.pid}-${trial}`;
      const name = `fault-killed-${trial}`;
      const dying = client(namespace);
      const held = await recorder.acquire(`holder-${trial}`, name, () =>
        dying.mutex(name).acquire({ owner: `holder-${trial}` }),
      );
      const waiter = client(namespace);
      const waiting = recorder.acquire(`waiter-${trial}`, name, () =>
        waiter.mutex(name).acquire({ owner: `waiter-${trial}`, waitMs: LEASE_MS + 10_000 }),
      );
      // Its owner is gone: the client closes with the hold open (no release), and does nothing more.
      recorder.fault('kill', held.owner);
      const killedAt = process.hrtime.bigint();
      await dying.close();
      const next = await waiting;
      freed.push(msSince(killedAt));
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(freed.at(-1)).toBeLessThanOrEqual(LEASE_MS + SLACK_MS);
      // close() lost the hold it no longer renews: the abandoned handle's signal aborted at once.
      expect((held.signal.reason as LockLostError | undefined)?.reason).toBe('client_closed');
      signalAborted.push(held.signal.aborted);
      await recorder.release(`waiter-${trial}`, name, next);
    }
    const report = checkLockHistory(recorder.merged(), { strict: true });
    expect(report.valid).toBe(true);
    reportRow({
      row: 'holder-killed',
      backend: 'local',
      fault: `the holder's owner dies inside the process: its client closed with the hold open, no release (watchdog lease ${LEASE_MS} ms), while a client of the same namespace waits (${TRIALS} times). A SIGKILLed process takes local locks and their waiters with it: across processes the row does not apply`,
      expected: ['OK', 'LIVE'],
      observed: `the closed client renewed no more; the hold ended with its lease and the waiter had the lock ${shownMs(freed)} after the close (bound: the lease + ${SLACK_MS} ms), with a greater token; no overlap. The abandoned handle's signal ${signalAborted.every(Boolean) ? "aborted at close() (LockLostError, reason 'client_closed')" : 'had not aborted'}`,
      file: FILE,
      checker: report,
      figures: { leaseMs: LEASE_MS, freedAfterMsMax: Math.round(Math.max(...freed)) },
    });
  });

  it('the holder’s task blocks the event loop past its lease: two holders (found), the fence refuses the stale write', async () => {
    const namespace = `fault-paused-${process.pid}`;
    const name = 'fault-paused';
    const pauseMs = 3 * LEASE_MS;
    const recorder = new HistoryRecorder();
    const store = new RedisFencedStore(redis);
    const holder = client(namespace);
    const held = await recorder.acquire('holder', name, () =>
      holder.mutex(name).acquire({ owner: 'holder' }),
    );
    let lostAt: bigint | undefined;
    held.onLost(() => (lostAt = process.hrtime.bigint())); // told, not recorded: it does not look
    const waiter = client(namespace);
    // The waiter writes as soon as it has the lock, in the same task as its grant.
    const waiting = recorder
      .acquire('waiter', name, () => waiter.mutex(name).acquire({ owner: 'waiter', waitMs: 30_000 }))
      .then(async (next) => {
        grantedAt = process.hrtime.bigint();
        await recorder.write(store, `fenced/${name}`, 'from the waiter', next);
        return next;
      });
    let grantedAt: bigint | undefined;
    await new Promise((resolve) => setImmediate(resolve)); // the waiter's first try refused: it waits
    recorder.fault('event-loop-blocked', 'holder', { ms: pauseMs });
    const blockedAt = process.hrtime.bigint();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pauseMs); // the whole process stops
    await new Promise((resolve) => setImmediate(resolve)); // the holder's work goes on after one await
    const accepted = await recorder.write(store, `fenced/${name}`, 'from the holder', held);
    const releasedAs = await held.release().catch((error: Error) => error.name);
    recorder.record({ proc: 'holder', type: 'ok', f: 'release', lock: name, outcome: String(releasedAs) });
    const next = await waiting;
    await recorder.release('waiter', name, next);

    expect(accepted).toBe(false);
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    expect(await store.read(`fenced/${name}`)).toBe('from the waiter');
    expect(lostAt).toBeDefined(); // its signal aborted — before its write: a careful holder would stop
    const report = checkLockHistory(recorder.merged(), { strict: true });
    expect(report.checks.exclusion.valid).toBe(false);
    expect(report.checks.exclusion.violations[0]?.owners).toEqual(
      expect.arrayContaining(['holder', 'waiter']),
    );
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    expect(report.checks.tokens.valid).toBe(true);
    const ms = (at: bigint | undefined) =>
      at === undefined ? NaN : Math.round(Number(at - blockedAt) / 1e6);
    reportRow({
      row: 'holder-paused',
      backend: 'local',
      fault: `the holder's task blocks the event loop (Atomics.wait) for ${pauseMs} ms, past its ${LEASE_MS} ms watchdog lease, while a client of the same namespace waits; after one await it writes without looking at its signal`,
      expected: ['VIOL', 'F-OK'],
      observed: `the whole process stopped, the waiter too; as the loop ran again (${ms(lostAt)} ms after the block began) the lease was over on the monotonic clock: the holder's signal aborted and the waiter was granted (${ms(grantedAt)} ms) and wrote; the holder then wrote: two holders, found by the checker; the fenced store refused its stale write; its release said ${String(releasedAs)}`,
      file: FILE,
      checker: report,
      figures: { pauseMs, leaseMs: LEASE_MS },
    });
  });
});
