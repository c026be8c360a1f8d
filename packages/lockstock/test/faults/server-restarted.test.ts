import { Etcd3 } from 'etcd3';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer, PostgresServer, RedisServer, ZooKeeperServer } from '@lockstock/servers';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { RedisFencedStore, type LockHandle } from '../../src/index.js';
import { EtcdLockClient } from '../../src/etcd/index.js';
import { PostgresLockClient } from '../../src/postgres/index.js';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';
import { ETCD_ONE_SECOND_LEASES, ZOOKEEPER_TICK_MS } from '../contract/backends.js';
import { lossSeen, mergeHistories, msSince, useFixtures, type LossReport } from '../helpers/crash.js';
import { reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { fencedWrite } from '../helpers/zk-fence.mjs';
import { adminClient, queueOf } from '../helpers/zookeeper.js';

/**
 * Fault row "server restarted" on the session backends (RELIABILITY.md §3; MySQL's is in
 * test/faults/mysql.test.ts): the one server is SIGKILLed and started again on its data while a holder
 * process (fixtures/fault-holder.mjs) holds a mutex and a client of this process waits for it.
 * - PostgreSQL: sessions die with the server, and advisory locks with them — the hold must be
 *   reported lost before anyone else holds the lock, the lock passes on once the server is back, and
 *   the fencing sequence must not go back (crash recovery), so the fence refuses the old holder.
 *   The waiter's failed wait must not crash this process (it did: an uncaught 'Connection terminated
 *   unexpectedly' from the connection its session was cleaning up, src/postgres/sessions.ts).
 * - etcd: leases are on disk (fsynced WAL), and a restarted leader gives every lease its full TTL
 *   again: a session whose keep-alives resume within its TTL keeps its key — the hold must survive,
 *   nobody else may get the lock meanwhile, its guarded write after the restart is accepted.
 * - ZooKeeper: sessions are in the transaction log and snapshot; a restarted server lets a client
 *   reconnect to its session within the timeout. Under connectionLossPolicy 'lost' the hold survives
 *   if the client is back in time, else it is reported lost (on a loaded machine the restart can
 *   outlast the session) — never granted twice by what the clients were told (under the default 'suspended' it is given up with the connection: test/faults/
 *   zookeeper-ensemble.test.ts shows that for a lost leader).
 * Verdicts from lockstock/checker (strict) on the merged history.
 */
const FILE = 'test/faults/server-restarted.test.ts';

let resources: RedisServer;
let redis: Redis;
const closers: Array<() => Promise<unknown>> = [];
const fixtures = useFixtures();
let unique = 0;
const lockName = (label: string) => `fault-restart-${label}-${process.pid}-${++unique}`;
const eventsOf = (owner: unknown): HistoryEvent[] =>
  fixtures.histories().filter((e) => e.proc === owner || e.owner === owner);

beforeAll(async () => {
  resources = await RedisServer.start();
  redis = new Redis(resources.url);
});
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  redis?.disconnect();
  await resources?.stop();
});

/**
 * A waiter: `take` as a recorded acquire. Its acquire may fail while the server is down (a typed
 * error: the server it waits on is gone) — `next()` then asks again, as a caller would; `acquired()`
 * says whether it was granted (a failure is no grant).
 */
function waitFor(recorder: HistoryRecorder, proc: string, name: string, take: () => Promise<LockHandle>) {
  let acquired = false;
  let failedWith: string | undefined;
  const waiting = recorder.acquire(proc, name, take);
  void waiting.then(
    () => (acquired = true),
    (error: Error) => (failedWith = error.name),
  );
  return {
    acquired: () => acquired,
    failedWith: () => failedWith,
    next: () => waiting.catch(() => recorder.acquire(proc, name, take)),
  };
}

/**
 * A hold that must survive the restart: the holder writes after it (accepted), nobody else got the lock
 * meanwhile, its release released; then the waiter has it with a greater token.
 */
async function survives(
  holding: ReturnType<typeof fixtures.fork>,
  waiter: ReturnType<typeof waitFor>,
  token: number,
) {
  holding.send({ type: 'write', value: 'after the restart' });
  const written = await holding.next('written');
  expect(waiter.acquired()).toBe(false); // nobody else got the lock while it held
  holding.send({ type: 'release' });
  const released = await holding.next('released');
  const next = await waiter.next();
  expect(written).toMatchObject({ accepted: true, signalAborted: false });
  expect(released).toMatchObject({ outcome: 'released' });
  expect(released.lost).toBeUndefined();
  expect(next.fencingToken).toBeGreaterThan(token);
  return next;
}

/** What a row says of its waiter's first acquire. */
const waiterWords = (waiter: ReturnType<typeof waitFor>) =>
  waiter.failedWith()
    ? ` (its first acquire failed with ${waiter.failedWith()} while the server was down; it asked again)`
    : '';

describe('lock faults: the server restarted under a holder and a waiter', () => {
  it('PostgreSQL: the hold is reported lost with its session, the lock passes on once the server is back, tokens go on growing', async () => {
    const server = await PostgresServer.start();
    closers.push(() => server.stop());
    const name = lockName('pg');
    const holding = fixtures.fork('fault-holder.mjs', {
      kind: 'contract',
      backend: { kind: 'postgres', url: server.url },
      resourceUrl: resources.url,
      name,
      watch: true,
      history: fixtures.historyFile(name),
    });
    const { token, owner } = await holding.next('holding');
    const recorder = new HistoryRecorder();
    const waiters = new PostgresLockClient({ postgres: server.url });
    waiters.on('connectionError', () => undefined); // the restart ends its sessions
    closers.push(() => waiters.close());
    const take = () => waiters.mutex(name).acquire({ owner: 'second', waitMs: 30_000 });
    const first = recorder.acquire('second', name, take);
    first.catch(() => undefined);
    const probe = new pg.Client({ connectionString: server.url });
    await probe.connect();
    await expect
      .poll(
        async () =>
          (
            await probe.query(
              "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
            )
          ).rows[0].n,
      )
      .toBe(1); // the waiter is in the server's queue
    await probe.end();
    recorder.fault('server-restart', 'postgres');
    const restartedAt = process.hrtime.bigint();
    await server.restart();
    const backAfterMs = msSince(restartedAt);
    let second: LockHandle;
    let waiterFailed: string | undefined;
    try {
      second = await first;
    } catch (error) {
      waiterFailed = (error as Error).name;
      second = await recorder.acquire('second', name, take);
    }
    const takenAfterMs = msSince(restartedAt);
    expect(second.fencingToken).toBeGreaterThan(token as number); // the sequence did not go back
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
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.valid).toBe(true); // the loss was told before the waiter had the lock
    expect(report.checks.fence).toMatchObject({ acceptedStale: 0, rejectedStale: 1 });
    reportRow({
      row: 'server-restarted',
      backend: 'postgres',
      fault:
        'PostgreSQL SIGKILLed and started again on its data dir while a holder process holds an advisory lock and another client waits in the lock queue; the holder then writes, not looking at its signal',
      expected: ['OK', 'F-OK'],
      observed: `the holder's signal aborted ${seen.ms === undefined ? '' : `${Math.round(seen.ms)} ms after the kill `}(session_lost), before anyone else held the lock; the server was back ${Math.round(backAfterMs)} ms after the kill; the waiter's ${waiterFailed ? `acquire failed with ${waiterFailed} and its retry` : 'acquire carried on and'} had the lock ${Math.round(takenAfterMs)} ms after it, with a greater token (the fencing sequence did not go back); the holder's late write refused by the fence; no overlap of what the clients were told`,
      file: FILE,
      checker: report,
      figures: { backAfterMs: Math.round(backAfterMs), takenAfterMs: Math.round(takenAfterMs) },
    });
  });

  it('etcd: the session lease outlives the restart — the hold survives, nobody else gets the lock meanwhile', async () => {
    const server = await EtcdServer.start({ args: ETCD_ONE_SECOND_LEASES });
    closers.push(() => server.stop());
    const admin = new Etcd3({ hosts: server.endpoint });
    closers.push(async () => admin.close());
    const ttl = 10;
    const name = lockName('etcd');
    const holding = fixtures.fork('fault-holder.mjs', {
      kind: 'etcd',
      hosts: [server.endpoint],
      sessionTtlSeconds: ttl,
      name,
      watch: true,
      history: fixtures.historyFile(name),
    });
    const { token, owner } = await holding.next('holding');
    const recorder = new HistoryRecorder();
    const waiters = new EtcdLockClient({ hosts: server.endpoint, sessionTtlSeconds: ttl });
    closers.push(() => waiters.close());
    const waiter = waitFor(recorder, 'second', name, () =>
      waiters.mutex(name).acquire({ owner: 'second', waitMs: 60_000 }),
    );
    const queue = () =>
      admin
        .getAll()
        .prefix(`ls/${encodeURIComponent(name)}/mutex/`)
        .keys();
    await expect.poll(queue).toHaveLength(2);
    recorder.fault('server-restart', 'etcd');
    const restartedAt = process.hrtime.bigint();
    await server.restart();
    const backAfterMs = msSince(restartedAt);
    const next = await survives(holding, waiter, token as number);
    recorder.resourceAnswered(
      `fenced/${name}`,
      await waiters.guardedPut(next, `fenced/${name}`, 'from second'),
      next,
    );
    await recorder.release('second', name, next);
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.valid).toBe(true);
    reportRow({
      row: 'server-restarted',
      backend: 'etcd',
      fault: `etcd (one member) SIGKILLed and started again on its data dir while a holder process (session TTL ${ttl} s) holds a mutex and another client waits`,
      expected: ['OK'],
      observed: `the server was back ${Math.round(backAfterMs)} ms after the kill with the session's lease and key (on disk); the holder's keep-alives resumed — its signal never aborted, its guarded write after the restart was accepted, its release released — and the waiter got the lock only then, with a greater token${waiterWords(waiter)}; no overlap`,
      file: FILE,
      checker: report,
      figures: { backAfterMs: Math.round(backAfterMs), ttlSeconds: ttl },
    });
  });

  it("ZooKeeper, policy 'lost': the hold survives the restart or is reported lost — never granted twice", async () => {
    const server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
    closers.push(() => server.stop());
    const admin = await adminClient(server.connectString);
    closers.push(async () => admin.close());
    const sessionMs = 4_000; // at most 20 ticks
    const name = lockName('zk');
    const holding = fixtures.fork('fault-holder.mjs', {
      kind: 'zookeeper',
      connectString: server.connectString,
      sessionTimeoutMs: sessionMs,
      connectionLossPolicy: 'lost',
      name,
      watch: true,
      history: fixtures.historyFile(name),
    });
    const { token, owner } = await holding.next('holding');
    const recorder = new HistoryRecorder();
    const waiters = new ZooKeeperLockClient({
      connectString: server.connectString,
      sessionTimeoutMs: sessionMs,
    });
    waiters.on('connectionError', () => undefined);
    closers.push(() => waiters.close());
    const waiter = waitFor(recorder, 'second', name, () =>
      waiters.mutex(name).acquire({ owner: 'second', waitMs: 60_000 }),
    );
    await expect.poll(() => queueOf(admin, 'locks', name)).toHaveLength(2);
    recorder.fault('server-restart', 'zookeeper');
    const restartedAt = process.hrtime.bigint();
    await server.restart();
    const backAfterMs = msSince(restartedAt);
    // The holder writes on, not looking at its signal; then releases.
    holding.send({ type: 'write', value: 'after the restart' });
    const written = await holding.next('written');
    const survived = written.signalAborted === false;
    if (survived) expect(waiter.acquired()).toBe(false); // nobody else got the lock while it held
    holding.send({ type: 'release' });
    const released = await holding.next('released');
    const next = await waiter.next();
    expect(next.fencingToken).toBeGreaterThan(token as number);
    recorder.resourceAnswered(
      `fenced/${name}`,
      await fencedWrite(admin, `/resources/${name}`, next.fencingToken, 'from second'),
      next,
    );
    await recorder.release('second', name, next);
    if (survived) {
      expect(written.accepted).toBe(true);
      expect(released).toMatchObject({ outcome: 'released' });
      expect(released.lost).toBeUndefined();
    } else {
      expect((released.lost as LossReport).reason).toBe('session_lost');
    }
    // Survived or reported lost, never granted twice by what the clients were told; nothing stale
    // accepted by the fence.
    const report = checkLockHistory(mergeHistories(recorder.events, eventsOf(owner)), { strict: true });
    expect(report.valid).toBe(true);
    expect(report.checks.fence.acceptedStale).toBe(0);
    const lost = released.lost as LossReport | undefined;
    reportRow({
      row: 'server-restarted',
      backend: 'zookeeper',
      fault: `a standalone ZooKeeper SIGKILLed and started again on its data dir while a holder process (connectionLossPolicy 'lost', session ${sessionMs / 1_000} s) holds a mutex and another client waits; the holder then writes, not looking at its signal`,
      expected: ['OK', 'F-OK'],
      observed: survived
        ? `the server was back ${Math.round(backAfterMs)} ms after the kill with the sessions of its log; the holder's client reconnected to its session — its signal never aborted, its fenced write after the restart was accepted, its release released — and the waiter got the lock only then, with a greater token${waiterWords(waiter)}; no overlap`
        : `the server was back ${Math.round(backAfterMs)} ms after the kill; the holder's client did not get its session back within its timeout: it reported the hold lost (${lost?.cause ?? lost?.reason}) ${lost ? `${Math.round(Number(BigInt(lost.at) - restartedAt) / 1e6)} ms after the kill` : ''} — before the waiter had the lock, with a greater token${waiterWords(waiter)}; its late write ${written.accepted ? 'came before any newer token reached the fence (accepted, not stale)' : 'refused by the fence'}; no overlap of what the clients were told`,
      file: FILE,
      checker: report,
      figures: { backAfterMs: Math.round(backAfterMs), sessionMs, survived: survived ? 1 : 0 },
    });
  });
});
