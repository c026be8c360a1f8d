import type { Client } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperServer } from '@lockstock/servers';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';
import { ZOOKEEPER_TICK_MS } from '../contract/backends.js';
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
import { fencedRead, fencedWrite } from '../helpers/zk-fence.mjs';
import { adminClient, closeSession, queueOf } from '../helpers/zookeeper.js';

/**
 * The lock fault rows on ZooKeeper (RELIABILITY.md §3, column ZK): a holder process SIGKILLed, paused
 * (SIGSTOP) past its session timeout, its session expired server-side (row 9), and its link
 * blackholed under each connection-loss policy. The holder is a process of its own
 * (fixtures/fault-holder.mjs) writing a JSON Lines history; the other client runs here; the fenced
 * resource is a znode that refuses a token below the greatest it saw (helpers/zk-fence.mjs: the
 * token is the lock node's czxid, Kleppmann's suggestion), beside an unfenced znode.
 */
const FILE = 'test/faults/zookeeper.test.ts';
/** How late the server may expire a session after its timeout (a tick), and a loaded machine. */
const EXPIRY_SLACK_MS = 1_500;

let server: ZooKeeperServer;
let admin: Client;
const clients: ZooKeeperLockClient[] = [];
const client = () => {
  const made = new ZooKeeperLockClient({ connectString: server.connectString, sessionTimeoutMs: 5_000 });
  made.on('connectionError', () => undefined);
  clients.push(made);
  return made;
};
const fixtures = useFixtures();
let unique = 0;
const lockName = (label: string) => `fault-${label}-${process.pid}-${++unique}`;

function holder(
  name: string,
  options: {
    sessionTimeoutMs: number;
    connectString?: string;
    watch?: boolean;
    policy?: 'suspended' | 'lost';
  },
) {
  return fixtures.fork('fault-holder.mjs', {
    kind: 'zookeeper',
    connectString: options.connectString ?? server.connectString,
    sessionTimeoutMs: options.sessionTimeoutMs,
    connectionLossPolicy: options.policy ?? 'suspended',
    name,
    watch: options.watch ?? false,
    history: fixtures.historyFile(name),
  });
}

/** The fixture's events and the resources' answers to it. */
const eventsOf = (owner: unknown): HistoryEvent[] =>
  fixtures.histories().filter((e) => e.proc === owner || e.owner === owner);

beforeAll(async () => {
  server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
  admin = await adminClient(server.connectString);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin?.close();
  await server?.stop();
});

describe('lock faults on ZooKeeper', () => {
  it('holder SIGKILLed: the lock passes on within its session timeout, no overlap', async () => {
    const timeouts = fullFaultSuite() ? [1_000, 1_000, 2_000, 2_000] : [1_000];
    const freed: number[] = [];
    const recorder = new HistoryRecorder();
    for (const sessionTimeoutMs of timeouts) {
      const name = lockName(`killed-${sessionTimeoutMs}`);
      const dying = holder(name, { sessionTimeoutMs });
      const { token, owner } = await dying.next('holding');
      const waiting = recorder.acquire(`waiter-${name}`, name, () =>
        client()
          .mutex(name)
          .acquire({ waitMs: sessionTimeoutMs + 10_000 }),
      );
      await expect.poll(() => queueOf(admin, 'locks', name)).toHaveLength(2);
      recorder.fault('kill', owner);
      const { result: next, freedAfterMs } = await killAndTime(dying, waiting);
      freed.push(freedAfterMs);
      expect(next.fencingToken).toBeGreaterThan(token as number);
      expect(freedAfterMs).toBeLessThanOrEqual(sessionTimeoutMs + EXPIRY_SLACK_MS);
      await recorder.release(`waiter-${name}`, name, next);
    }
    const report = checkLockHistory(mergeHistories(recorder.events, fixtures.histories()), { strict: true });
    expect(report.valid).toBe(true);
    const shown = timeouts.map((t, i) => `${t} ms session: ${Math.round(freed[i]!)} ms`).join(', ');
    reportRow({
      row: 'holder-killed',
      backend: 'zookeeper',
      fault: `a holder process SIGKILLed while another client waits (session timeout ${[...new Set(timeouts)].join(' ms, ')} ms)`,
      expected: ['OK', 'LIVE'],
      observed: `the lock passed on once the server expired the dead session and deleted its node (${shown} after the kill; bound: timeout + ${EXPIRY_SLACK_MS} ms), with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { freedAfterMsMax: Math.round(Math.max(...freed)) },
    });
  });

  it('holder paused past its session: two holders (found), and the czxid fence refuses the stale write', async () => {
    const name = lockName('paused');
    const paused = holder(name, { sessionTimeoutMs: 1_000 });
    const { token: pausedToken, owner } = await paused.next('holding');
    const recorder = new HistoryRecorder();
    recorder.fault('sigstop', owner);
    paused.kill('SIGSTOP');
    const stoppedAt = process.hrtime.bigint();
    const second = await recorder.acquire('second', name, () =>
      client().mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
    );
    const takenAfterMs = msSince(stoppedAt);
    expect(second.fencingToken).toBeGreaterThan(pausedToken as number);
    const resource = `/resources/${name}`;
    recorder.resourceAnswered(
      `fenced/${name}`,
      await fencedWrite(admin, resource, second.fencingToken, 'from second'),
      second,
    );
    await fencedWrite(admin, `/unfenced/${name}`, Number.MAX_SAFE_INTEGER, 'from second');
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

    expect(written.accepted).toBe(false);
    expect(await fencedRead(admin, resource)).toEqual({ token: second.fencingToken, value: 'from second' });
    expect((await fencedRead(admin, `/unfenced/${name}`)).value).toBe(`stale from ${String(owner)}`);
    const lost = released.lost as LossReport | undefined;
    if (lost) expect(lost.reason).toBe('session_lost');
    const seen = lossSeen(lost, resumedAt, 'SIGCONT');
    const history = mergeHistories(recorder.events, eventsOf(owner));
    const report = checkLockHistory(history, { strict: true });
    expect(report.checks.exclusion.valid).toBe(false);
    expect(report.checks.exclusion.violations[0]?.owners).toEqual(expect.arrayContaining(['second', owner]));
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    expect(report.checks.tokens.valid).toBe(true);
    // The unfenced znode is the fence switched off: with each write's token as its writer believed
    // it, the checker itself names the stale write the znode took over the newer holder's.
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
      backend: 'zookeeper',
      fault:
        'a holder process SIGSTOPped past its 1 s session timeout; another client takes the lock; the holder resumes (SIGCONT) and writes without looking at its signal',
      expected: ['VIOL', 'F-OK'],
      observed: `the other client got the lock ${Math.round(takenAfterMs)} ms after the stop (the server expired the session, its node went); once resumed, ${seen.words}, and it wrote: two holders, found by the checker; the czxid fence refused its stale write, the unfenced znode took it over the newer holder's value`,
      file: FILE,
      checker: report,
      figures: {
        takenAfterMs: Math.round(takenAfterMs),
        ...(seen.ms === undefined ? {} : { abortedAfterResumeMs: Math.round(seen.ms) }),
      },
    });
  });

  it('session expired server-side (row 9): two holders (found), and the czxid fence refuses the stale write', async () => {
    const name = lockName('expired');
    const proxy = await FaultProxy.start(
      { host: '127.0.0.1', port: server.port },
      { closes: 'dropped-while-dark' },
    );
    try {
      const expiring = holder(name, { sessionTimeoutMs: 4_000, connectString: `127.0.0.1:${proxy.port}` });
      const { token, owner, sessionId, password, timeoutMs } = await expiring.next('holding');
      const recorder = new HistoryRecorder();
      const c = client();
      const waiting = recorder.acquire('second', name, () =>
        c.mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
      );
      await expect.poll(() => queueOf(admin, 'locks', name)).toHaveLength(2);
      // The holder's link goes dark (else its client takes the session back), and its session is
      // ended on the server — what a session timeout does to a client that went quiet, at once.
      proxy.set('blackhole');
      recorder.fault('session-expiry', owner);
      const expiredAt = process.hrtime.bigint();
      await closeSession(server.connectString, {
        sessionId: Buffer.from(sessionId as string, 'hex'),
        password: Buffer.from(password as string, 'hex'),
        timeoutMs: timeoutMs as number,
      });
      const second = await waiting;
      const takenAfterMs = msSince(expiredAt);
      expect(second.fencingToken).toBeGreaterThan(token as number);
      const resource = `/resources/${name}`;
      recorder.resourceAnswered(
        `fenced/${name}`,
        await fencedWrite(admin, resource, second.fencingToken, 'from second'),
        second,
      );
      await fencedWrite(admin, `/unfenced/${name}`, Number.MAX_SAFE_INTEGER, 'from second');

      // The link heals; the holder, busy with its work, writes without looking at its signal.
      const healedAt = process.hrtime.bigint();
      proxy.set('pass');
      proxy.reset();
      expiring.send({ type: 'write', value: 'stale' });
      const written = await expiring.next('written');
      expiring.send({ type: 'release' });
      const released = await expiring.next('released');
      await recorder.release('second', name, second);

      expect(written.accepted).toBe(false);
      expect((await fencedRead(admin, `/unfenced/${name}`)).value).toBe(`stale from ${String(owner)}`);
      const lost = released.lost as LossReport | undefined;
      if (lost) expect(lost.reason).toBe('session_lost');
      const seen = lossSeen(lost, healedAt, 'the heal');
      const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
      expect(report.checks.exclusion.valid).toBe(false);
      expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
      reportRow({
        row: 'session-expired',
        backend: 'zookeeper',
        fault:
          "the holder's session ended on the server while another client waits (row 9: its link blackholed, the session closed server-side with its id and password); the link heals and the holder keeps writing",
        expected: ['VIOL', 'F-OK'],
        observed: `the waiter got the lock ${Math.round(takenAfterMs)} ms after the expiry (the ephemeral node went with the session); the dark link hid the expiry from the holder: ${seen.words}; a holder that keeps working overlaps: two holders, found by the checker; the czxid fence refused its write, the unfenced znode took it`,
        file: FILE,
        checker: report,
        figures: {
          takenAfterMs: Math.round(takenAfterMs),
          ...(seen.ms === undefined ? {} : { abortedAfterHealMs: Math.round(seen.ms) }),
        },
      });
    } finally {
      await proxy.stop();
    }
  });

  for (const policy of ['suspended', 'lost'] as const) {
    it(`holder partitioned, connectionLossPolicy '${policy}': when it learns its loss, and the fence`, async () => {
      const name = lockName(`partitioned-${policy}`);
      const sessionTimeoutMs = 2_000;
      const proxy = await FaultProxy.start(
        { host: '127.0.0.1', port: server.port },
        { closes: 'dropped-while-dark' },
      );
      try {
        const cut = holder(name, {
          sessionTimeoutMs,
          connectString: `127.0.0.1:${proxy.port}`,
          watch: true,
          policy,
        });
        const { token, owner } = await cut.next('holding');
        const recorder = new HistoryRecorder();
        proxy.set('blackhole');
        const cutAt = process.hrtime.bigint();
        recorder.fault('partition', owner, { phase: 'start' });
        const second = await recorder.acquire('second', name, () =>
          client().mutex(name).acquire({ owner: 'second', waitMs: 15_000 }),
        );
        const takenAfterMs = msSince(cutAt);
        expect(second.fencingToken).toBeGreaterThan(token as number);
        const resource = `/resources/${name}`;
        recorder.resourceAnswered(
          `fenced/${name}`,
          await fencedWrite(admin, resource, second.fencingToken, 'from second'),
          second,
        );

        proxy.set('pass');
        proxy.reset();
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
        const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)));
        expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
        const overlapped = !report.checks.exclusion.valid;
        console.info(
          `ZooKeeper partition (${policy}): holder lost at ${Math.round(abortedAfterCutMs)} ms (${lost.cause}), other holder at ${Math.round(takenAfterMs)} ms, overlap: ${overlapped}`,
        );
        // Under 'suspended' the holder gives up when its read timeout (2/3 of the session timeout)
        // drops the dark connection, a third of a timeout before the server can expire the session.
        if (policy === 'suspended') expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
        reportRow({
          row: policy === 'suspended' ? 'holder-partitioned' : 'holder-partitioned-policy-lost',
          backend: 'zookeeper',
          fault: `the holder's link to ZooKeeper goes dark (fault proxy blackhole); session timeout ${sessionTimeoutMs} ms, connectionLossPolicy '${policy}'`,
          expected: policy === 'suspended' ? ['OK', 'F-OK'] : ['F-OK'],
          observed: `the holder's signal aborted ${Math.round(abortedAfterCutMs)} ms into the partition (${lost.cause}); the other client got the lock at ${Math.round(takenAfterMs)} ms: ${overlapped ? 'they overlapped (found by the checker)' : 'no overlap'}${policy === 'lost' ? ` — a race, not a margin: the holder's deadline (a whole session timeout after its last answer) and the server's expiry run from nearly the same instant, so only the fence is promised` : ''}; its write after the heal refused by the czxid fence`,
          file: FILE,
          checker: report,
          figures: {
            abortedAfterCutMs: Math.round(abortedAfterCutMs),
            takenAfterMs: Math.round(takenAfterMs),
          },
        });
      } finally {
        await proxy.stop();
      }
    });
  }
});
