import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MariaDbServer, RedisServer } from '@lockstock/servers';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { LockTimeoutError, RedisFencedStore, type LockHandle } from '../../src/index.js';
import { MySqlLockClient, mysqlLockName } from '../../src/mysql/index.js';
import { lossSeen, mergeHistories, msSince, useFixtures, type LossReport } from '../helpers/crash.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { killHolders, shownMs } from '../helpers/killed-holder.js';
import { HistoryRecorder } from '../helpers/recorder.js';

/**
 * The lock fault rows on MySQL's user locks (GET_LOCK), on a private MariaDB (RELIABILITY.md §3,
 * column MY): a holder process SIGKILLed, paused (SIGSTOP: a session lock has no lease), its connection
 * killed (KILL CONNECTION, row 11), the server restarted under it, and its link blackholed (a fault
 * proxy; the server keeps the dark session and its lock). The holder is a process of its
 * own (fixtures/fault-holder.mjs, kind 'contract') writing a JSON Lines history; the other client runs
 * here. The fenced resource is a RedisFencedStore (the (token, owner) rule) on a Redis of its own,
 * beside an unfenced list there: only the lock's session is faulted. Verdicts come from
 * lockstock/checker on the merged history.
 */
const FILE = 'test/faults/mysql.test.ts';

let server: MariaDbServer;
let resources: RedisServer;
let admin: mysql.Pool;
let redis: Redis;
const clients: MySqlLockClient[] = [];
function client(): MySqlLockClient {
  const made = new MySqlLockClient({ mysql: server.url, maxConnections: 4 });
  made.on('connectionError', () => undefined); // the faults end its connections, by design
  clients.push(made);
  return made;
}
const fixtures = useFixtures();
let unique = 0;
const lockName = (label: string) => `fault-${label}-${process.pid}-${++unique}`;
const eventsOf = (owner: unknown): HistoryEvent[] =>
  fixtures.histories().filter((e) => e.proc === owner || e.owner === owner);

function holder(name: string, options: { watch?: boolean; url?: string; sessionCheckMs?: number } = {}) {
  return fixtures.fork('fault-holder.mjs', {
    kind: 'contract',
    backend: { kind: 'mysql', url: options.url ?? server.url },
    sessionCheckMs: options.sessionCheckMs,
    resourceUrl: resources.url,
    name,
    watch: options.watch ?? false,
    history: fixtures.historyFile(name),
  });
}

async function query<R>(sql: string, values: unknown[] = []): Promise<R[]> {
  const [rows] = await admin.query(sql, values);
  return rows as R[];
}
/** The connection id holding the user lock of the mutex `name`, or null. */
const holderOf = async (name: string): Promise<number | null> =>
  (await query<{ holder: number | null }>('SELECT IS_USED_LOCK(?) AS holder', [mysqlLockName(name)]))[0]!
    .holder;
/** Connections waiting in GET_LOCK for the mutex `name` (the process list). */
const waitersOn = async (name: string): Promise<number> =>
  (
    await query<{ id: number }>(
      `SELECT ID AS id FROM information_schema.PROCESSLIST
        WHERE STATE = 'User lock' AND INFO LIKE CONCAT('%', ?, '%')`,
      [mysqlLockName(name)],
    )
  ).length;

beforeAll(async () => {
  [server, resources] = await Promise.all([MariaDbServer.start(), RedisServer.start()]);
  admin = mysql.createPool({ ...server.connectionOptions, connectionLimit: 2 });
  redis = new Redis(resources.url);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await admin?.end();
  redis?.disconnect();
  await Promise.all([server?.stop(), resources?.stop()]);
});

const unfenced = (name: string) => redis.lrange(`unfenced/${name}`, 0, -1);

describe('lock faults on MySQL (MariaDB user locks)', () => {
  it('holder SIGKILLed: its connection ends with its process, the lock passes on at once', async () => {
    const trials = fullFaultSuite() ? 5 : 1;
    const waiters = client();
    const { freedAfterMs, report } = await killHolders({
      fixtures,
      trials,
      lockName: () => lockName('killed'),
      holderArgs: (name) => ({
        kind: 'contract',
        backend: { kind: 'mysql', url: server.url },
        name,
        history: fixtures.historyFile(name),
      }),
      take: (name) => waiters.mutex(name).acquire({ waitMs: 10_000 }),
      queued: async (name) => void (await expect.poll(() => waitersOn(name)).toBe(1)), // in GET_LOCK
      // No lease: the kernel closes the dead process's socket, the server ends the session at once.
      boundMs: 2_000,
    });
    reportRow({
      row: 'holder-killed',
      backend: 'mysql',
      fault: `a holder process SIGKILLed while another client waits in the server's GET_LOCK (${trials} time${trials > 1 ? 's' : ''})`,
      expected: ['OK', 'LIVE'],
      observed: `the server ended the dead process's session as its socket closed and the waiter's GET_LOCK returned ${shownMs(freedAfterMs)} after the kill, with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { freedAfterMsMax: Math.round(Math.max(...freedAfterMs)) },
    });
  });

  it('holder paused: a user lock has no lease — the waiter waits for it, nobody overlaps', async () => {
    const name = lockName('paused');
    const pauseMs = fullFaultSuite() ? 6_000 : 2_000;
    const paused = holder(name, { watch: true });
    const { token, owner } = await paused.next('holding');
    const recorder = new HistoryRecorder();
    recorder.fault('sigstop', owner);
    paused.kill('SIGSTOP');
    const stoppedAt = process.hrtime.bigint();
    let settled = false;
    const waiting = recorder.acquire('second', name, () =>
      client().mutex(name).acquire({ owner: 'second', waitMs: 30_000 }),
    );
    void waiting.finally(() => (settled = true));
    await expect.poll(() => waitersOn(name)).toBe(1);
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
    await recorder.write(new RedisFencedStore(redis), `fenced/${name}`, 'from second', second);
    await recorder.release('second', name, second);
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.valid).toBe(true);
    reportRow({
      row: 'holder-paused',
      backend: 'mysql',
      fault: `a holder process SIGSTOPped for ${pauseMs / 1_000} s while another client waits in GET_LOCK, then resumed (SIGCONT); it writes and releases`,
      expected: ['OK'],
      observed: `the session (and its lock) outlived the pause: the waiter waited ${Math.round(waitedMs)} ms — until the resumed holder released; the holder's signal never aborted and its write after the pause was accepted; no overlap. Liveness waits for the holder (a server-side wait_timeout shorter than the pause would end the session instead)`,
      file: FILE,
      checker: report,
      figures: { waitedMs: Math.round(waitedMs) },
    });
  });

  it('connection killed during the work (KILL CONNECTION, row 11): two holders (found), the fence refuses the stale write', async () => {
    const name = lockName('connection-killed');
    const cut = holder(name);
    const { token, owner } = await cut.next('holding');
    const recorder = new HistoryRecorder();
    const waiting = recorder.acquire('second', name, () =>
      client().mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
    );
    await expect.poll(() => waitersOn(name)).toBe(1);
    const connection = Number(await holderOf(name));
    recorder.fault('kill-connection', owner, { connection });
    const killedAt = process.hrtime.bigint();
    await admin.query(`KILL CONNECTION ${connection}`);
    const second = await waiting;
    const takenAfterMs = msSince(killedAt);
    expect(second.fencingToken).toBeGreaterThan(token as number);
    await recorder.write(new RedisFencedStore(redis), `fenced/${name}`, 'from second', second);
    await redis.rpush(`unfenced/${name}`, 'from second');

    // The holder carries on with its work, not looking at its signal.
    cut.send({ type: 'write', value: 'stale' });
    const written = await cut.next('written');
    cut.send({ type: 'release' });
    const released = await cut.next('released');
    await recorder.release('second', name, second);

    expect(written.accepted).toBe(false);
    expect(await unfenced(name)).toEqual(['from second', `stale from ${owner as string}`]); // after it
    const lost = released.lost as LossReport | undefined;
    expect(lost?.reason).toBe('session_lost'); // a killed connection is news at once
    expect(released.outcome).toBe('expired');
    const seen = lossSeen(lost, killedAt, 'the KILL');
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.checks.exclusion.valid).toBe(false);
    expect(report.checks.exclusion.violations[0]?.owners).toEqual(expect.arrayContaining(['second', owner]));
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    expect(report.checks.tokens.valid).toBe(true);
    reportRow({
      row: 'connection-terminated',
      backend: 'mysql',
      fault:
        "KILL CONNECTION of the holder's session while it works (row 11), a waiter queued in GET_LOCK; the holder keeps writing, not looking at its signal",
      expected: ['VIOL', 'F-OK'],
      observed: `the server freed the lock with the session: the waiter had it ${takenAfterMs.toFixed(1)} ms after the KILL; for the holder, ${seen.words}; a holder that keeps working overlaps: two holders, found by the checker; the fenced store refused its write, the unfenced list took it after the new holder's`,
      file: FILE,
      checker: report,
      figures: {
        takenAfterMs: Math.round(takenAfterMs),
        ...(seen.ms === undefined ? {} : { abortedAfterMs: Math.round(seen.ms) }),
      },
    });
  });

  it('server restarted under a holder and a waiter: the hold is reported lost, the lock passes on once it is back, tokens go on growing', async () => {
    const name = lockName('restarted');
    const holding = holder(name, { watch: true });
    const { token, owner } = await holding.next('holding');
    const recorder = new HistoryRecorder();
    const waiters = client();
    const take = () => waiters.mutex(name).acquire({ owner: 'second', waitMs: 30_000 });
    const first = recorder.acquire('second', name, take);
    first.catch(() => undefined);
    await expect.poll(() => waitersOn(name)).toBe(1);
    recorder.fault('server-restart', 'mariadb');
    const restartedAt = process.hrtime.bigint();
    await server.restart(); // SIGKILL, then the same data dir and port again
    const backAfterMs = msSince(restartedAt);
    // The waiter's session died with the server: its acquire fails (a typed error) or carries on.
    let second: LockHandle;
    let waiterFailed: string | undefined;
    try {
      second = await first;
    } catch (error) {
      waiterFailed = (error as Error).name;
      second = await recorder.acquire('second', name, take);
    }
    const takenAfterMs = msSince(restartedAt);
    expect(second.fencingToken).toBeGreaterThan(token as number); // the fencing sequence did not go back
    await recorder.write(new RedisFencedStore(redis), `fenced/${name}`, 'from second', second);

    holding.send({ type: 'write', value: 'after the restart' });
    const written = await holding.next('written');
    holding.send({ type: 'release' });
    const released = await holding.next('released');
    await recorder.release('second', name, second);
    const lost = released.lost as LossReport | undefined;
    expect(lost?.reason).toBe('session_lost');
    expect(written).toMatchObject({ accepted: false, signalAborted: true });
    const seen = lossSeen(lost, restartedAt, 'the kill');
    // What the clients were told: the holder's hold ended at its `lost`, before the waiter had it.
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.valid).toBe(true);
    expect(report.checks.fence).toMatchObject({ acceptedStale: 0, rejectedStale: 1 });
    reportRow({
      row: 'server-restarted',
      backend: 'mysql',
      fault:
        'MariaDB SIGKILLed and started again on its data dir while a holder process holds a user lock and another client waits in GET_LOCK; the holder then writes, not looking at its signal',
      expected: ['OK', 'F-OK'],
      observed: `the holder's signal aborted ${seen.ms === undefined ? '' : `${Math.round(seen.ms)} ms after the kill `}(session_lost), before anyone else held the lock; the server was back ${Math.round(backAfterMs)} ms after the kill; the waiter's ${waiterFailed ? `acquire failed with ${waiterFailed} and its retry` : 'acquire carried on and'} had the lock ${Math.round(takenAfterMs)} ms after it, with a greater token (the fencing sequence did not go back); the holder's late write refused by the fence; no overlap of what the clients were told`,
      file: FILE,
      checker: report,
      figures: { backAfterMs: Math.round(backAfterMs), takenAfterMs: Math.round(takenAfterMs) },
    });
  });

  it("holder partitioned, server defaults: its signal aborts, but the server keeps the dark session's lock until the link heals", async () => {
    const name = lockName('partitioned');
    const proxy = await FaultProxy.start(
      { host: server.host, port: server.port },
      { closes: 'dropped-while-dark' },
    );
    try {
      const cut = holder(name, {
        url: `mysql://${server.user}@127.0.0.1:${proxy.port}/${server.database}`,
        sessionCheckMs: 1_000,
        watch: true,
      });
      const { token, owner } = await cut.next('holding');
      const connection = await holderOf(name);
      const recorder = new HistoryRecorder();
      proxy.set('blackhole');
      const cutAt = process.hrtime.bigint();
      recorder.fault('partition', owner, { phase: 'start' });
      const waiters = client();
      const waitMs = fullFaultSuite() ? 6_000 : 3_000;
      await expect(
        recorder.acquire('second', name, () => waiters.mutex(name).acquire({ owner: 'second', waitMs })),
      ).rejects.toBeInstanceOf(LockTimeoutError);
      const lockedThroughMs = msSince(cutAt);
      expect(await holderOf(name)).toBe(connection); // the server still holds it for the dark session
      proxy.set('pass'); // heal: the client's close (it gave up on the session) reaches the server
      recorder.fault('partition', owner, { phase: 'stop' });
      const healedAt = process.hrtime.bigint();
      const second = await recorder.acquire('second', name, () =>
        waiters.mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
      );
      const afterHealMs = msSince(healedAt);
      expect(second.fencingToken).toBeGreaterThan(token as number);
      await recorder.write(new RedisFencedStore(redis), `fenced/${name}`, 'from second', second);
      cut.send({ type: 'write', value: 'late' });
      const written = await cut.next('written');
      cut.send({ type: 'release' });
      const released = await cut.next('released');
      await recorder.release('second', name, second);

      expect(written).toMatchObject({ accepted: false, signalAborted: true });
      const lost = released.lost as LossReport;
      expect(lost.reason).toBe('session_lost');
      const abortedAfterCutMs = Number(BigInt(lost.at) - cutAt) / 1e6;
      const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
      expect(report.valid).toBe(true); // the holder was told before anyone else had the lock
      expect(report.checks.fence).toMatchObject({ acceptedStale: 0, rejectedStale: 1 });
      reportRow({
        row: 'holder-partitioned-no-server-timeout',
        backend: 'mysql',
        fault:
          "the holder's link to MariaDB goes dark (fault proxy blackhole, closes swallowed too); sessionCheckMs 1 s; server defaults (wait_timeout 8 h)",
        expected: ['OK', 'UNAV'],
        observed: `the holder's signal aborted ${Math.round(abortedAfterCutMs)} ms into the partition (its session check went unanswered), but the server kept the dark session and its user lock: a waiter timed out after ${Math.round(lockedThroughMs)} ms, nobody held it meanwhile; ${Math.round(afterHealMs)} ms after the heal (the client's close arrived) the waiter had it, with a greater token; the late write refused by the fence; no overlap`,
        file: FILE,
        checker: report,
        figures: {
          abortedAfterCutMs: Math.round(abortedAfterCutMs),
          afterHealMs: Math.round(afterHealMs),
        },
      });
    } finally {
      await proxy.stop();
    }
  });
});
