import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer, httpRequest, PostgresServer, RedisServer, ZooKeeperServer } from '@lockstock/servers';
import { checkLockHistory } from '../../src/checker/index.js';
import type { BackendConfig } from '../contract/subjects.mjs';
import { ETCD_ONE_SECOND_LEASES, ZOOKEEPER_TICK_MS } from '../contract/backends.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { checkHistory, sectionEvents, type SectionRecord } from '../helpers/history.js';
import { forkFixtures } from '../helpers/processes.js';

/**
 * Fault row "a herd of waiters on one lock" (issue 29's row, issue 35 on the session backends):
 * WAITERS callers spread over PROCESSES OS processes (fixtures/herd-waiter.mjs) ask for one
 * mutex at the same moment, each once, on ZooKeeper, etcd and PostgreSQL. All must get it, one at a
 * time (a probe counter on a Redis of its own, incremented non-atomically, must come out exact; the
 * sections' history passes lockstock/checker), and a release must wake one waiter, not the herd: the
 * server's work per acquisition is counted on the server before and after — ZooKeeper's packets
 * received (`mntr`), etcd's gRPC messages received (`/metrics`), PostgreSQL's transactions
 * (pg_stat_database). Waking the herd would cost about WAITERS / 2 requests per release (every waiter
 * asking again); the bound is a small constant.
 */
const FILE = 'test/faults/herd-sessions.test.ts';
const WAITERS = fullFaultSuite() ? 500 : 100;
const PROCESSES = fullFaultSuite() ? 4 : 2;
/**
 * Server requests per acquisition, at most: a few per waiter, however many wait (waking the herd would
 * cost about WAITERS / 2 more: 50 in the quick variant, 250 in the full one).
 */
const BOUND = 20;

let probe: RedisServer;
beforeAll(async () => {
  probe = await RedisServer.start();
});
afterAll(async () => {
  await probe?.stop();
});

interface HerdOutcome {
  readonly records: SectionRecord[];
  readonly elapsedMs: number;
  readonly requests: number;
}

/**
 * Runs the herd on `backend`; `count(settled)` reads the server's request counter, before the herd asks
 * and — `settled` — once its processes exited.
 */
async function herd(
  backend: BackendConfig,
  name: string,
  count: (settled: boolean) => Promise<number>,
): Promise<HerdOutcome> {
  const config = {
    backend,
    probeUrl: probe.url,
    name,
    waiters: WAITERS / PROCESSES,
    waitMs: fullFaultSuite() ? 300_000 : 100_000, // a bound, so a stall fails instead of hanging
  };
  const members = forkFixtures(
    'herd-waiter.mjs',
    Array.from({ length: PROCESSES }, () => [JSON.stringify(config)]),
  );
  try {
    await Promise.all(members.map((c) => c.next('ready'))); // every process connected before any asks
    const before = await count(false);
    const startedAt = performance.now();
    for (const member of members) member.send({ type: 'go' });
    const done = await Promise.all(members.map((c) => c.next('done')));
    const elapsedMs = performance.now() - startedAt;
    await Promise.all(members.map((c) => c.exited));
    const requests = (await count(true)) - before;
    return { records: done.flatMap((m) => m.records as SectionRecord[]), elapsedMs, requests };
  } finally {
    for (const member of members) member.kill();
  }
}

/** Every waiter acquired once, as itself, one at a time: from the records, the checker and the probe. */
async function checked(name: string, outcome: HerdOutcome) {
  const { records } = outcome;
  expect(records).toHaveLength(WAITERS);
  expect(new Set(records.map((r) => r.owner)).size).toBe(WAITERS);
  expect(records.filter((r) => r.outcome !== 'released')).toEqual([]);
  const probeRedis = new Redis(probe.url);
  const counter = Number(await probeRedis.get(`probe:{${name}}:counter`));
  probeRedis.disconnect();
  expect(counter).toBe(WAITERS); // no section's update lost: none overlapped another
  expect(checkHistory(records)).toMatchObject({ overlaps: 0, tokenRegressions: 0, maxConcurrent: 1 });
  const report = checkLockHistory(sectionEvents(records));
  expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
  expect(report.checks.tokens).toEqual({ valid: true, violations: [] });
  const perAcquire = Math.round((outcome.requests / WAITERS) * 100) / 100;
  process.stdout.write(
    `herd ${name}: ${JSON.stringify({ perAcquire, elapsedMs: Math.round(outcome.elapsedMs) })}\n`,
  );
  expect(perAcquire).toBeLessThan(BOUND);
  return { report, perAcquire };
}

function row(
  backend: string,
  outcome: HerdOutcome,
  perAcquire: number,
  counted: string,
  report: ReturnType<typeof checkLockHistory>,
) {
  reportRow({
    row: `herd-${WAITERS}`,
    backend,
    fault: `${WAITERS} waiters in ${PROCESSES} processes ask for one mutex at once, each once`,
    expected: ['OK', 'LIVE'],
    observed: `all ${WAITERS} acquired once in ${(outcome.elapsedMs / 1000).toFixed(1)} s, one at a time (probe counter exact, no overlap, tokens growing); the server saw ${perAcquire} ${counted} per acquisition (${outcome.requests} in all; bound ${BOUND}: a release wakes one waiter, not the herd)`,
    file: FILE,
    checker: report,
    figures: {
      waiters: WAITERS,
      processes: PROCESSES,
      elapsedMs: Math.round(outcome.elapsedMs),
      requestsPerAcquire: perAcquire,
    },
  });
}

describe('fault: a herd of waiters on one lock, on the session backends', () => {
  it(
    `ZooKeeper: ${WAITERS} waiters in ${PROCESSES} processes, each acquires once; packets per acquisition bounded`,
    { timeout: 300_000 },
    async () => {
      const server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
      try {
        const packets = async () =>
          Number(/zk_packets_received\s+(\d+)/.exec(await server.fourLetterWord('mntr'))?.[1] ?? NaN);
        const name = `herd-zk-${process.pid}`;
        const outcome = await herd(
          { kind: 'zookeeper', connectString: server.connectString, sessionTimeoutMs: 10_000 },
          name,
          packets,
        );
        const { report, perAcquire } = await checked(name, outcome);
        row(
          'zookeeper',
          outcome,
          perAcquire,
          'packets (mntr zk_packets_received: every request and ping)',
          report,
        );
      } finally {
        await server.stop();
      }
    },
  );

  it(
    `etcd: ${WAITERS} waiters in ${PROCESSES} processes, each acquires once; gRPC messages per acquisition bounded`,
    { timeout: 300_000 },
    async () => {
      const server = await EtcdServer.start({ args: ETCD_ONE_SECOND_LEASES });
      try {
        const messages = async () => {
          const { body } = await httpRequest(`${server.endpoint}/metrics`);
          return [...body.matchAll(/^grpc_server_msg_received_total\{[^}]*\} (\d+)/gm)].reduce(
            (sum, m) => sum + Number(m[1]),
            0,
          );
        };
        const name = `herd-etcd-${process.pid}`;
        const outcome = await herd(
          { kind: 'etcd', hosts: [server.endpoint], sessionTtlSeconds: 10 },
          name,
          messages,
        );
        const { report, perAcquire } = await checked(name, outcome);
        row(
          'etcd',
          outcome,
          perAcquire,
          'gRPC messages received (/metrics grpc_server_msg_received_total: requests, watch and keep-alive messages)',
          report,
        );
      } finally {
        await server.stop();
      }
    },
  );

  it(
    `PostgreSQL: ${WAITERS} waiters in ${PROCESSES} processes, each acquires once; transactions per acquisition bounded`,
    { timeout: 300_000 },
    async () => {
      const server = await PostgresServer.start();
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      try {
        // Other sessions' counts reach pg_stat_database when they end: the count after the herd is
        // read once only this session is left (the herd processes' warm-up statements are in it too).
        const transactions = async (settled: boolean) => {
          if (settled) {
            const others = async () =>
              (
                await admin.query<{ n: number }>(
                  'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()',
                )
              ).rows[0]!.n;
            await expect.poll(others, { timeout: 30_000 }).toBe(1);
          }
          const { rows } = await admin.query<{ n: string }>(
            'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
          );
          return Number(rows[0]!.n);
        };
        const name = `herd-pg-${process.pid}`;
        const outcome = await herd({ kind: 'postgres', url: server.url }, name, transactions);
        const { report, perAcquire } = await checked(name, outcome);
        row(
          'postgres',
          outcome,
          perAcquire,
          "transactions (pg_stat_database: every statement of the waiters' sessions)",
          report,
        );
      } finally {
        await admin.end();
        await server.stop();
      }
    },
  );
});
