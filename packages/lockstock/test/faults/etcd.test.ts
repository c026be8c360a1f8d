import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer, httpRequest } from '@lockstock/servers';
import { checkLockHistory } from '../../src/checker/index.js';
import { EtcdLockClient } from '../../src/etcd/index.js';
import { ETCD_ONE_SECOND_LEASES } from '../contract/backends.js';
import {
  killAndTime,
  lossSeen,
  mergeHistories,
  msSince,
  useFixtures,
  type LossReport,
} from '../helpers/crash.js';
import { withBelievedTokens } from '../helpers/believed-tokens.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';

/**
 * The lock fault rows on etcd (RELIABILITY.md §3, column ET): a holder process SIGKILLed, paused
 * (SIGSTOP) past its session's TTL, its lease revoked server-side (row 10, the forced lease expiry),
 * and its link to etcd blackholed. The holder is a process of its own (fixtures/fault-holder.mjs)
 * writing a JSON Lines history; the other client runs here; the fenced resource is etcd itself
 * (guardedPut: `If(CreateRevision(lock key) == token)`, the token being that create revision), beside
 * an unfenced key. Verdicts come from lockstock/checker on the merged history.
 */
const FILE = 'test/faults/etcd.test.ts';
/** etcd expires a lease at most this long after its TTL ran out (its lessor looks every 500 ms), and a loaded machine. */
const EXPIRY_SLACK_MS = 1_500;

let server: EtcdServer;
let admin: Etcd3;
const clients: EtcdLockClient[] = [];
const client = (sessionTtlSeconds = 10) => {
  const made = new EtcdLockClient({ hosts: server.endpoint, sessionTtlSeconds });
  clients.push(made);
  return made;
};
const fixtures = useFixtures();
let unique = 0;
const lockName = (label: string) => `fault-${label}-${process.pid}-${++unique}`;

/** The keys queued for the mutex `name`, as etcd has them. */
async function queue(name: string): Promise<string[]> {
  return admin
    .getAll()
    .prefix(`ls/${encodeURIComponent(name)}/mutex/`)
    .keys();
}

function holder(name: string, options: { ttl: number; hosts?: string[]; watch?: boolean }) {
  return fixtures.fork('fault-holder.mjs', {
    kind: 'etcd',
    hosts: options.hosts ?? [server.endpoint],
    sessionTtlSeconds: options.ttl,
    name,
    watch: options.watch ?? false,
    history: fixtures.historyFile(name),
  });
}

beforeAll(async () => {
  server = await EtcdServer.start({ args: ETCD_ONE_SECOND_LEASES });
  admin = new Etcd3({ hosts: server.endpoint });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin?.close();
  await server?.stop();
});

describe('lock faults on etcd', () => {
  it('holder SIGKILLed: the lock passes on within its session TTL, no overlap', async () => {
    const ttls = fullFaultSuite() ? [1, 1, 2, 2] : [1];
    const freed: number[] = [];
    const recorder = new HistoryRecorder();
    for (const ttl of ttls) {
      const name = lockName(`killed-${ttl}`);
      const dying = holder(name, { ttl });
      const { token } = await dying.next('holding');
      const waiting = recorder.acquire(`waiter-${name}`, name, () =>
        client()
          .mutex(name)
          .acquire({ waitMs: ttl * 1_000 + 10_000 }),
      );
      await expect.poll(() => queue(name)).toHaveLength(2);
      recorder.fault('kill', `holder-${dying.child.pid}`);
      const { result: next, freedAfterMs } = await killAndTime(dying, waiting);
      freed.push(freedAfterMs);
      expect(next.fencingToken).toBeGreaterThan(token as number);
      expect(freedAfterMs).toBeLessThanOrEqual(ttl * 1_000 + EXPIRY_SLACK_MS);
      await recorder.release(`waiter-${name}`, name, next);
    }
    const report = checkLockHistory(mergeHistories(recorder.events, fixtures.histories()), { strict: true });
    expect(report.valid).toBe(true);
    const shown = ttls.map((ttl, i) => `${ttl} s TTL: ${Math.round(freed[i]!)} ms`).join(', ');
    reportRow({
      row: 'holder-killed',
      backend: 'etcd',
      fault: `a holder process SIGKILLed while another client waits (session TTL ${[...new Set(ttls)].join(' s, ')} s)`,
      expected: ['OK', 'LIVE'],
      observed: `the lock passed on once etcd expired the dead session's lease (${shown} after the kill; bound TTL + ${EXPIRY_SLACK_MS} ms), with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { freedAfterMsMax: Math.round(Math.max(...freed)) },
    });
  });

  it('holder paused past its session TTL: two holders (found), and etcd refuses the stale write', async () => {
    const name = lockName('paused');
    const paused = holder(name, { ttl: 1 });
    const { token: pausedToken, owner } = await paused.next('holding');
    const recorder = new HistoryRecorder();
    recorder.fault('sigstop', owner);
    paused.kill('SIGSTOP');
    const stoppedAt = process.hrtime.bigint();
    const c = client();
    const second = await recorder.acquire('second', name, () =>
      c.mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
    );
    const takenAfterMs = msSince(stoppedAt);
    expect(second.fencingToken).toBeGreaterThan(pausedToken as number);
    recorder.resourceAnswered(
      `fenced/${name}`,
      await c.guardedPut(second, `fenced/${name}`, 'from second'),
      second,
    );
    await admin.put(`unfenced/${name}`).value('from second');
    recorder.record({
      src: 'resource',
      proc: 'resource',
      type: 'ok',
      f: 'write',
      res: `unfenced/${name}`,
      owner: 'second',
    });

    const resumedAt = process.hrtime.bigint(); // before the signal: the holder may run before kill() returns
    paused.kill('SIGCONT');
    recorder.fault('sigcont', owner);
    paused.send({ type: 'write', value: 'stale' });
    const written = await paused.next('written');
    paused.send({ type: 'release' });
    const released = await paused.next('released');
    await recorder.release('second', name, second);

    expect(written.accepted).toBe(false); // etcd refused it: the paused holder's key went with its lease
    expect(await admin.get(`fenced/${name}`).string()).toBe('from second');
    // Unfenced, the stale write landed over the newer holder's: the lost update a lease lock allows.
    expect(await admin.get(`unfenced/${name}`).string()).toBe(`stale from ${String(owner)}`);
    const lost = released.lost as LossReport | undefined;
    if (lost) expect(lost.reason).toBe('session_lost');
    const seen = lossSeen(lost, resumedAt, 'SIGCONT (its session past its TTL)', { cause: false });
    const history = mergeHistories(
      recorder.events,
      fixtures.histories().filter((e) => e.proc === owner || e.owner === owner),
    );
    const report = checkLockHistory(history, { strict: true });
    expect(report.checks.exclusion.valid).toBe(false);
    expect(report.checks.exclusion.violations[0]?.owners).toEqual(expect.arrayContaining(['second', owner]));
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    expect(report.checks.tokens.valid).toBe(true);
    // The unfenced key is the fence switched off: with each write's token as its writer believed it,
    // the checker itself names the stale write the key took over the newer holder's.
    const unfenced = checkLockHistory(
      withBelievedTokens(history, `unfenced/${name}`, {
        second: second.fencingToken,
        [String(owner)]: pausedToken as number,
      }),
      { strict: true },
    );
    expect(unfenced.checks.fence.violations).toEqual([
      {
        res: `unfenced/${name}`,
        kind: 'accepted-stale',
        owner,
        token: String(pausedToken),
        at: expect.any(String) as string,
        latest: { token: String(second.fencingToken), owner: 'second' },
      },
    ]);
    reportRow({
      row: 'holder-paused',
      backend: 'etcd',
      fault:
        'a holder process SIGSTOPped past its 1 s session TTL; another client takes the lock; the holder resumes (SIGCONT) and writes without looking at its signal',
      expected: ['VIOL', 'F-OK'],
      observed: `the other client got the lock ${Math.round(takenAfterMs)} ms after the stop (etcd expired the lease); once resumed, ${seen.words}, and it wrote: two holders, found by the checker; guardedPut refused its stale write, the unfenced key took it over the newer holder's value`,
      file: FILE,
      checker: report,
      figures: {
        takenAfterMs: Math.round(takenAfterMs),
        ...(seen.ms === undefined ? {} : { abortedAfterResumeMs: Math.round(seen.ms) }),
      },
    });
  });

  it('lease revoked server-side (forced lease expiry): two holders (found), and etcd refuses the stale write', async () => {
    const name = lockName('revoked');
    const revoked = holder(name, { ttl: 10 });
    const { token, owner, leaseId } = await revoked.next('holding');
    const recorder = new HistoryRecorder();
    const c = client();
    const waiting = recorder.acquire('second', name, () =>
      c.mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
    );
    await expect.poll(() => queue(name)).toHaveLength(2);
    recorder.fault('lease-revoke', owner);
    const revokedAt = process.hrtime.bigint();
    // What an operator's `etcdctl lease revoke` does: etcd deletes every key on the lease at once.
    const answer = await httpRequest(`${server.endpoint}/v3/lease/revoke`, {
      method: 'POST',
      body: { ID: leaseId },
    });
    expect(answer.status).toBe(200);
    const second = await waiting;
    const takenAfterMs = msSince(revokedAt);
    expect(second.fencingToken).toBeGreaterThan(token as number);
    recorder.resourceAnswered(
      `fenced/${name}`,
      await c.guardedPut(second, `fenced/${name}`, 'from second'),
      second,
    );
    await admin.put(`unfenced/${name}`).value('from second');

    // The holder was busy and carries on with its work: it writes, not looking at its signal.
    revoked.send({ type: 'write', value: 'stale' });
    const written = await revoked.next('written');
    revoked.send({ type: 'release' });
    const released = await revoked.next('released');
    await recorder.release('second', name, second);

    expect(written.accepted).toBe(false);
    expect(await admin.get(`unfenced/${name}`).string()).toBe(`stale from ${String(owner)}`);
    const lost = released.lost as LossReport | undefined;
    if (lost) expect(lost.reason).toBe('session_lost');
    const seen = lossSeen(lost, revokedAt, 'it (its watched sentinel key deleted)', { cause: false });
    const history = mergeHistories(
      recorder.events,
      fixtures.histories().filter((e) => e.proc === owner || e.owner === owner),
    );
    const report = checkLockHistory(history, { strict: true });
    expect(report.checks.exclusion.valid).toBe(false);
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    reportRow({
      row: 'lease-expired',
      backend: 'etcd',
      fault:
        "the holder's session lease revoked server-side while another client waits (row 10: the forced lease expiry, as `etcdctl lease revoke`); the holder keeps writing",
      expected: ['VIOL', 'F-OK'],
      observed: `the waiter got the lock ${Math.round(takenAfterMs)} ms after the revoke; for the holder, ${seen.words}; a holder that keeps working overlaps: two holders, found by the checker; guardedPut refused its write, the unfenced key took it`,
      file: FILE,
      checker: report,
      figures: {
        takenAfterMs: Math.round(takenAfterMs),
        ...(seen.ms === undefined ? {} : { abortedAfterRevokeMs: Math.round(seen.ms) }),
      },
    });
  });

  it('holder partitioned from etcd: it learns its loss before anyone else gets the lock; its late write is refused', async () => {
    const name = lockName('partitioned');
    const url = new URL(server.endpoint);
    const proxy = await FaultProxy.start(
      { host: url.hostname, port: Number(url.port) },
      { closes: 'dropped-while-dark' },
    );
    try {
      const cut = holder(name, { ttl: 1, hosts: [`http://127.0.0.1:${proxy.port}`], watch: true });
      const { token, owner } = await cut.next('holding');
      const recorder = new HistoryRecorder();
      recorder.fault('partition', owner, { phase: 'start' });
      proxy.set('blackhole');
      const cutAt = process.hrtime.bigint();
      const c = client();
      const second = await recorder.acquire('second', name, () =>
        c.mutex(name).acquire({ owner: 'second', waitMs: 15_000 }),
      );
      const takenAfterMs = msSince(cutAt);
      expect(second.fencingToken).toBeGreaterThan(token as number);
      recorder.resourceAnswered(
        `fenced/${name}`,
        await c.guardedPut(second, `fenced/${name}`, 'from second'),
        second,
      );

      proxy.set('pass');
      proxy.reset(); // the dark connections are dropped; the client reconnects
      recorder.fault('partition', owner, { phase: 'stop' });
      cut.send({ type: 'write', value: 'late' });
      const written = await cut.next('written');
      cut.send({ type: 'release' });
      const released = await cut.next('released');
      await recorder.release('second', name, second);

      expect(written.accepted).toBe(false);
      const lost = released.lost as { at: string; reason: string; cause: string };
      expect(lost.reason).toBe('session_lost');
      const abortedAfterCutMs = Number(BigInt(lost.at) - cutAt) / 1e6;
      const history = mergeHistories(
        recorder.events,
        fixtures.histories().filter((e) => e.proc === owner || e.owner === owner),
      );
      const report = checkLockHistory(history);
      // The holder's signal aborted (recorded as `lost`) before the other client's acquire returned.
      expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
      expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
      reportRow({
        row: 'holder-partitioned',
        backend: 'etcd',
        fault:
          "the holder's link to etcd goes dark (fault proxy blackhole: nothing passes, nothing closes); session TTL 1 s",
        expected: ['OK', 'F-OK'],
        observed: `the holder's session lapsed ${Math.round(abortedAfterCutMs)} ms into the partition (unreachable: no keep-alive answered within TTL − drift, counted from when the last answered one was sent), before etcd expired the lease and the other client got the lock (${Math.round(takenAfterMs)} ms): no overlap; its write after the heal refused by guardedPut`,
        file: FILE,
        checker: report,
        figures: { abortedAfterCutMs: Math.round(abortedAfterCutMs), takenAfterMs: Math.round(takenAfterMs) },
      });
    } finally {
      await proxy.stop();
    }
  });
});
