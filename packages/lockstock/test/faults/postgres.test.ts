import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer } from '@lockstock/servers';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { LockTimeoutError, PostgresFencedStore } from '../../src/index.js';
import { lockKey, PostgresLockClient, type PostgresLockClientOptions } from '../../src/postgres/index.js';
import {
  killAndTime,
  lossSeen,
  mergeHistories,
  msSince,
  useFixtures,
  type LossReport,
} from '../helpers/crash.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';

/**
 * The lock fault rows on PostgreSQL's advisory locks (RELIABILITY.md §3, column PG): a holder process
 * SIGKILLed, its connection terminated during its work (row 11) with a session lock and with a
 * transaction-level one, the holder paused (a session lock has no lease), and its link blackholed.
 * The holder is a process of its own (fixtures/fault-holder.mjs) writing a JSON Lines history; the
 * other client runs here; the fenced resource is PostgresFencedStore (the (token, owner) rule), beside
 * an unfenced table, both reached on their own connections (only the lock's session is faulted).
 */
const FILE = 'test/faults/postgres.test.ts';
const SEQUENCE = 'lockstock_fencing_tokens';

let server: PostgresServer;
let admin: pg.Pool;
const clients: PostgresLockClient[] = [];
function client(options: Partial<PostgresLockClientOptions> = {}): PostgresLockClient {
  const made = new PostgresLockClient({ postgres: server.url, maxConnections: 4, ...options });
  made.on('connectionError', () => undefined);
  clients.push(made);
  return made;
}
const fixtures = useFixtures();
let unique = 0;
const lockName = (label: string) => `fault-${label}-${process.pid}-${++unique}`;
const eventsOf = (owner: unknown): HistoryEvent[] =>
  fixtures.histories().filter((e) => e.proc === owner || e.owner === owner);

function holder(
  name: string,
  options: { url?: string; sessionCheckMs?: number; scope?: 'transaction'; watch?: boolean } = {},
) {
  return fixtures.fork('fault-holder.mjs', {
    kind: 'postgres',
    url: options.url ?? server.url,
    resourceUrl: server.url,
    sessionCheckMs: options.sessionCheckMs,
    scope: options.scope,
    fencingSequence: SEQUENCE,
    name,
    watch: options.watch ?? false,
    history: fixtures.historyFile(name),
  });
}

/** Server backends holding or waiting for the advisory lock of `name` (pg_locks). */
async function sessionsOn(name: string): Promise<Array<{ pid: number; granted: boolean }>> {
  const key = lockKey(name);
  const { rows } = await admin.query<{ pid: number; granted: boolean }>(
    `SELECT pid, granted FROM pg_locks
      WHERE locktype = 'advisory' AND objsubid = 1
        AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid`,
    [key.toString()],
  );
  return rows;
}
const holderPid = async (name: string) => (await sessionsOn(name)).find((s) => s.granted)!.pid;

beforeAll(async () => {
  server = await PostgresServer.start();
  admin = new pg.Pool({ connectionString: server.url, max: 4 });
  admin.on('error', () => undefined);
  await new PostgresFencedStore(admin).migrate();
  await admin.query(`CREATE SEQUENCE IF NOT EXISTS ${SEQUENCE}`);
  await admin.query(
    'CREATE TABLE fault_unfenced (id bigserial PRIMARY KEY, res text NOT NULL, owner text NOT NULL, value text NOT NULL, token bigint)',
  );
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await admin?.end();
  await server?.stop();
});

const unfencedRows = async (name: string) =>
  (
    await admin.query<{ owner: string; value: string; token: string | null }>(
      'SELECT owner, value, token FROM fault_unfenced WHERE res = $1 ORDER BY id',
      [name],
    )
  ).rows;

describe('lock faults on PostgreSQL', () => {
  it('holder SIGKILLed: its session ends with its process, the lock passes on at once', async () => {
    const trials = fullFaultSuite() ? 5 : 1;
    const freed: number[] = [];
    const recorder = new HistoryRecorder();
    for (let trial = 0; trial < trials; trial++) {
      const name = lockName('killed');
      const dying = holder(name);
      const { token, owner } = await dying.next('holding');
      const waiting = recorder.acquire(`waiter-${name}`, name, () =>
        client().mutex(name).acquire({ waitMs: 10_000 }),
      );
      await expect.poll(async () => (await sessionsOn(name)).length).toBe(2); // queued on the server
      recorder.fault('kill', owner);
      const { result: next, freedAfterMs } = await killAndTime(dying, waiting);
      freed.push(freedAfterMs);
      expect(next.fencingToken).toBeGreaterThan(token as number);
      // No lease to run out: the kernel closes the dead process's socket and the server ends the
      // session at once. Generous for a loaded machine; a few ms is the norm.
      expect(freedAfterMs).toBeLessThan(2_000);
      await recorder.release(`waiter-${name}`, name, next);
    }
    const report = checkLockHistory(mergeHistories(recorder.events, fixtures.histories()), { strict: true });
    expect(report.valid).toBe(true);
    reportRow({
      row: 'holder-killed',
      backend: 'postgres',
      fault: `a holder process SIGKILLed while another client waits in PostgreSQL's lock queue (${trials} time${trials > 1 ? 's' : ''})`,
      expected: ['OK', 'LIVE'],
      observed: `the server ended the dead process's session as its socket closed and granted the waiter the lock ${freed.map((ms) => `${ms.toFixed(1)} ms`).join(', ')} after the kill, with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { freedAfterMsMax: Math.round(Math.max(...freed)) },
    });
  });

  it('holder paused: a session lock has no lease — the waiter waits for it, nobody overlaps', async () => {
    const name = lockName('paused');
    const pauseMs = 3_000;
    const paused = holder(name, { watch: true });
    const { token, owner } = await paused.next('holding');
    const recorder = new HistoryRecorder();
    recorder.fault('sigstop', owner);
    paused.kill('SIGSTOP');
    const stoppedAt = process.hrtime.bigint();
    let settled = false;
    const c = client();
    const waiting = recorder.acquire('second', name, () =>
      c.mutex(name).acquire({ owner: 'second', waitMs: 30_000 }),
    );
    void waiting.finally(() => (settled = true));
    await expect.poll(async () => (await sessionsOn(name)).length).toBe(2);
    await sleep(pauseMs); // the fault's length: the holder stays stopped this long
    expect(settled).toBe(false); // nothing took the lock from the stopped holder
    paused.kill('SIGCONT');
    recorder.fault('sigcont', owner);
    paused.send({ type: 'write', value: 'after the pause' });
    const written = await paused.next('written');
    paused.send({ type: 'release' });
    const released = await paused.next('released');
    const second = await waiting;
    const waitedMs = msSince(stoppedAt);
    expect(written).toMatchObject({ accepted: true, signalAborted: false }); // it still held the lock
    expect(released.outcome).toBe('released');
    expect(released.lost).toBeUndefined();
    expect(second.fencingToken).toBeGreaterThan(token as number);
    const store = new PostgresFencedStore(admin);
    recorder.resourceAnswered(
      `fenced/${name}`,
      await store.write(`fenced/${name}`, 'from second', second),
      second,
    );
    await recorder.release('second', name, second);
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.valid).toBe(true);
    reportRow({
      row: 'holder-paused',
      backend: 'postgres',
      fault: `a holder process SIGSTOPped for ${pauseMs / 1_000} s while another client waits, then resumed (SIGCONT); it writes and releases`,
      expected: ['OK'],
      observed: `the session (and its lock) outlived the pause: the waiter waited ${Math.round(waitedMs)} ms — until the resumed holder released; the holder's signal never aborted and its write after the pause was accepted; no overlap. Liveness waits for the holder (a server-side timeout such as idle_session_timeout would end the session instead — see holder-partitioned)`,
      file: FILE,
      checker: report,
      figures: { waitedMs: Math.round(waitedMs) },
    });
  });

  it('connection terminated during the work, session lock (row 11): two holders (found), the fence refuses the stale write', async () => {
    const name = lockName('terminated');
    const cut = holder(name);
    const { token, owner } = await cut.next('holding');
    const recorder = new HistoryRecorder();
    const c = client();
    const waiting = recorder.acquire('second', name, () =>
      c.mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
    );
    await expect.poll(async () => (await sessionsOn(name)).length).toBe(2);
    const pid = await holderPid(name);
    recorder.fault('terminate-backend', owner, { pid });
    const terminatedAt = process.hrtime.bigint();
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const second = await waiting;
    const takenAfterMs = msSince(terminatedAt);
    expect(second.fencingToken).toBeGreaterThan(token as number);
    const store = new PostgresFencedStore(admin);
    recorder.resourceAnswered(
      `fenced/${name}`,
      await store.write(`fenced/${name}`, 'from second', second),
      second,
    );
    await admin.query('INSERT INTO fault_unfenced (res, owner, value) VALUES ($1, $2, $3)', [
      name,
      'second',
      'from second',
    ]);

    // The holder carries on with its work, on its other connections, not looking at its signal.
    cut.send({ type: 'write', value: 'stale' });
    const written = await cut.next('written');
    cut.send({ type: 'release' });
    const released = await cut.next('released');
    await recorder.release('second', name, second);

    expect(written.accepted).toBe(false);
    expect((await unfencedRows(name)).map((r) => r.owner)).toEqual(['second', owner]); // it landed after
    const lost = released.lost as LossReport | undefined;
    if (lost) expect(lost.reason).toBe('session_lost');
    const seen = lossSeen(lost, terminatedAt, 'it');
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.checks.exclusion.valid).toBe(false);
    expect(report.checks.exclusion.violations[0]?.owners).toEqual(expect.arrayContaining(['second', owner]));
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    reportRow({
      row: 'connection-terminated',
      backend: 'postgres',
      fault:
        "pg_terminate_backend of the holder's session while it works (row 11), a waiter queued; the holder keeps writing on its other connections",
      expected: ['VIOL', 'F-OK'],
      observed: `the server freed the lock with the session: the waiter had it ${takenAfterMs.toFixed(1)} ms after the terminate; for the holder, ${seen.words}; a holder that keeps working overlaps: two holders, found by the checker; the fenced store refused its write, the unfenced table took it after the new holder's`,
      file: FILE,
      checker: report,
      figures: {
        takenAfterMs: Math.round(takenAfterMs),
        ...(seen.ms === undefined ? {} : { abortedAfterMs: Math.round(seen.ms) }),
      },
    });
  });

  it('connection terminated during the work, transaction-level lock (row 11): its writes roll back with it — nothing stale lands, even unfenced', async () => {
    const name = lockName('terminated-xact');
    const cut = holder(name, { scope: 'transaction' });
    const { token, owner, serverPid } = await cut.next('holding');
    cut.send({ type: 'write', value: 'before' });
    expect((await cut.next('written')).error).toBeUndefined();
    const recorder = new HistoryRecorder();
    // The waiter, in a transaction of its own, queued behind the holder.
    const c = client();
    const tx = await admin.connect();
    recorder.record({ proc: 'second', type: 'invoke', f: 'acquire', lock: name });
    await tx.query('BEGIN');
    const waiting = c.withTransactionLock(tx, name, async (lock) => {
      recorder.record({
        proc: 'second',
        type: 'ok',
        f: 'acquire',
        lock: name,
        owner: 'second',
        token: lock.fencingToken,
      });
      await tx.query('INSERT INTO fault_unfenced (res, owner, value, token) VALUES ($1, $2, $3, $4)', [
        name,
        'second',
        'from second',
        lock.fencingToken,
      ]);
      return lock.fencingToken;
    });
    await expect.poll(async () => (await sessionsOn(name)).length).toBe(2);
    // The server ends the holder's transaction, and with it the lock and every write it made: the
    // hold ends as far as anything it does can take effect (recorded as the server's event). Recorded
    // as the call goes out, not when it answers: the waiter may get the lock (and record it) before
    // pg_terminate_backend's answer reaches this test — a CI run saw that order.
    recorder.record({
      src: 'server',
      proc: owner as string,
      type: 'ok',
      f: 'lost',
      lock: name,
      reason: 'transaction ended',
    });
    await admin.query('SELECT pg_terminate_backend($1)', [serverPid]);
    const terminatedAt = process.hrtime.bigint();
    const secondToken = await waiting;
    recorder.record({ proc: 'second', type: 'invoke', f: 'release', lock: name });
    await tx.query('COMMIT');
    recorder.record({ proc: 'second', type: 'ok', f: 'release', lock: name });
    tx.release();
    const takenAfterMs = msSince(terminatedAt);
    expect(secondToken).toBeGreaterThan(token as number);

    cut.send({ type: 'write', value: 'stale' }); // its next statement: the connection is gone
    const written = await cut.next('written');
    cut.send({ type: 'release' });
    const released = await cut.next('released');
    expect(written.error).toBeDefined();
    expect(released.outcome).toMatch(/^not committed/);
    // What PostgreSQL committed — the resource's own record, in commit order (one holder at a time).
    const rows = await unfencedRows(name);
    expect(rows.map((r) => r.owner)).toEqual(['second']); // neither of the holder's writes survived
    const committed: HistoryEvent[] = rows.map((r) => ({
      src: 'resource',
      proc: 'resource',
      type: 'ok',
      f: 'write',
      res: `unfenced/${name}`,
      token: Number(r.token),
      owner: r.owner,
      t: String(process.hrtime.bigint()),
    }));
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner), committed), {
      strict: true,
    });
    expect(report.valid).toBe(true);
    reportRow({
      row: 'connection-terminated-xact',
      backend: 'postgres',
      fault:
        "pg_terminate_backend of the holder's connection while it works inside the transaction its transaction-level lock lives in (row 11), a waiter queued; the holder then writes again and commits",
      expected: ['OK'],
      observed: `the terminated transaction rolled back with its lock: the waiter had the lock ${takenAfterMs.toFixed(1)} ms later; the holder's write before the kill and its write after (${String(written.error)}) never committed — the table, which checks no token, holds only the new holder's row; no overlap of what took effect`,
      file: FILE,
      checker: report,
      figures: { takenAfterMs: Math.round(takenAfterMs) },
    });
  });

  for (const serverTimeout of [true, false]) {
    it(`holder partitioned, ${serverTimeout ? 'idle_session_timeout 3 s on its session' : 'server defaults'}: what the server keeps, and when`, async () => {
      const name = lockName(`partitioned-${serverTimeout}`);
      const proxy = await FaultProxy.start(
        { host: server.host, port: server.port },
        { closes: 'dropped-while-dark' },
      );
      try {
        const url = new URL(`postgres://${server.user}@127.0.0.1:${proxy.port}/${server.database}`);
        // Through a loopback proxy TCP keepalives are answered by the proxy's own socket: they can
        // never find the dark peer. A server-side timeout stands in for them.
        if (serverTimeout) url.searchParams.set('options', '-c idle_session_timeout=3000');
        const cut = holder(name, { url: url.toString(), sessionCheckMs: 1_000, watch: true });
        const { token, owner } = await cut.next('holding');
        const recorder = new HistoryRecorder();
        proxy.set('blackhole');
        const cutAt = process.hrtime.bigint();
        recorder.fault('partition', owner, { phase: 'start' });
        const c = client();
        const waitMs = serverTimeout ? 15_000 : 6_000;
        let second;
        let refused: unknown;
        try {
          second = await recorder.acquire('second', name, () =>
            c.mutex(name).acquire({ owner: 'second', waitMs }),
          );
        } catch (error) {
          refused = error;
        }
        const answeredAfterMs = msSince(cutAt);
        let lockedThrough: number | undefined;
        if (serverTimeout) {
          expect(second!.fencingToken).toBeGreaterThan(token as number);
        } else {
          // The server still holds the dark session's lock: nobody gets it while the link is dark.
          expect(refused).toBeInstanceOf(LockTimeoutError);
          expect((await sessionsOn(name)).filter((s) => s.granted)).toHaveLength(1);
          lockedThrough = answeredAfterMs;
        }
        proxy.set('pass'); // heal: the client's close (it gave up on the session) reaches the server
        recorder.fault('partition', owner, { phase: 'stop' });
        const healedAt = process.hrtime.bigint();
        second ??= await recorder.acquire('second', name, () =>
          c.mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
        );
        const afterHealMs = msSince(healedAt);
        const store = new PostgresFencedStore(admin);
        recorder.resourceAnswered(
          `fenced/${name}`,
          await store.write(`fenced/${name}`, 'from second', second),
          second,
        );
        cut.send({ type: 'write', value: 'late' });
        const written = await cut.next('written');
        cut.send({ type: 'release' });
        const released = await cut.next('released');
        await recorder.release('second', name, second);

        expect(written.accepted).toBe(false);
        const lost = released.lost as { at: string; reason: string };
        expect(lost.reason).toBe('session_lost');
        const abortedAfterCutMs = Number(BigInt(lost.at) - cutAt) / 1e6;
        const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)));
        expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
        // The client's session check (1 s) gave up before the server's timeout (3 s) ended the session.
        expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
        reportRow({
          row: serverTimeout ? 'holder-partitioned' : 'holder-partitioned-no-server-timeout',
          backend: 'postgres',
          fault: serverTimeout
            ? "the holder's link to PostgreSQL goes dark (fault proxy blackhole, closes swallowed too); sessionCheckMs 1 s; idle_session_timeout 3 s on its session (standing in for TCP keepalive, which a loopback proxy answers)"
            : "the holder's link to PostgreSQL goes dark (fault proxy blackhole, closes swallowed too); sessionCheckMs 1 s; server defaults (no session timeout)",
          expected: serverTimeout ? ['OK', 'F-OK'] : ['OK', 'UNAV'],
          observed: serverTimeout
            ? `the holder's session check gave up ${Math.round(abortedAfterCutMs)} ms into the partition (its signal aborted); the server ended the silent session at its idle timeout and the waiter got the lock ${Math.round(answeredAfterMs)} ms in: no overlap; the late write after the heal refused by the fenced store. Were the server's timeout shorter than the client's check, the holder would still believe while another holds: keep sessionCheckMs below it`
            : `the holder's signal aborted ${Math.round(abortedAfterCutMs)} ms into the partition, but the server kept the dark session and its lock: a waiter timed out after ${Math.round(lockedThrough!)} ms, nobody held it meanwhile (a real network's TCP keepalive ends such a session after tcp_keepalives_idle + count × interval, 2 h+ by OS default); ${Math.round(afterHealMs)} ms after the heal (the client's close arrived) the waiter had it; the late write refused`,
          file: FILE,
          checker: report,
          figures: {
            abortedAfterCutMs: Math.round(abortedAfterCutMs),
            ...(serverTimeout
              ? { takenAfterMs: Math.round(answeredAfterMs) }
              : { afterHealMs: Math.round(afterHealMs) }),
          },
        });
      } finally {
        await proxy.stop();
      }
    });
  }
});
