import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { PostgresServer, RedisServer, startRedisServers } from '@lockstock/servers';
import { PostgresTokenSource, RedlockClient } from '../../src/index.js';
import { useFixtures } from '../helpers/crash.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { killHolders, shownMs } from '../helpers/killed-holder.js';
import { pausePastLease } from '../helpers/paused-holder.js';

/**
 * Fault row "holder killed" (RELIABILITY.md §3.2 row 1) on Redlock: five independent masters, fencing
 * tokens from a PostgreSQL sequence (PostgresTokenSource). A holder process (fixtures/fault-holder.mjs)
 * holds the mutex on a majority with a watchdog-renewed lease and is SIGKILLed while a client of this
 * process waits. Redlock has no wake-ups: the waiter backs off with full jitter capped by the holder's
 * lease, so the lock passes on within the lease (the dead holder's keys expiring on every master) plus
 * one back-off — plus slack for a loaded machine; lockstock/checker reads the merged history.
 * "Holder paused" (row 2): the holder SIGSTOPped past its lease, another client takes the lock, the
 * holder resumes and writes — two holders (Kleppmann's GC pause), which the checker must find; a fence
 * (RedisFencedStore on a Redis of its own, tokens from the PostgreSQL sequence) refuses the stale write.
 */
const FILE = 'test/faults/redlock-holder-faults.test.ts';
/** The holder's watchdog timeout, its lease on each master (above the clients' 1 s node timeout). */
const LEASE_MS = 2_000;
const SLACK_MS = 2_000;
const TRIALS = fullFaultSuite() ? 5 : 1;

let masters: RedisServer[];
let resources: RedisServer;
let postgres: PostgresServer;
let pool: pg.Pool;
const clients: RedlockClient[] = [];
const fixtures = useFixtures();
let unique = 0;

beforeAll(async () => {
  [masters, postgres, resources] = await Promise.all([
    startRedisServers(5),
    PostgresServer.start(),
    RedisServer.start(),
  ]);
  pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
  pool.on('error', () => undefined); // idle connections see the server stop at the end
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await pool?.end();
  await Promise.all([...(masters ?? []).map((m) => m.stop()), postgres?.stop(), resources?.stop()]);
});

function redlockClient(): RedlockClient {
  const client = new RedlockClient({
    nodes: masters.map((m) => m.url),
    fencing: new PostgresTokenSource(pool),
    nodeTimeoutMs: 1_000, // as the holder's (test/contract/subjects.mjs): a loaded machine is slow
  });
  clients.push(client);
  return client;
}
const backend = () => ({
  kind: 'redlock',
  urls: masters.map((m) => m.url),
  databaseUrl: postgres.url,
  watchdogTimeoutMs: LEASE_MS,
});

describe('lock faults on Redlock: holder killed, holder paused', () => {
  it('a SIGKILLed holder’s lock passes on once its lease has ended on the masters, no overlap', async () => {
    const waiters = redlockClient();
    const { freedAfterMs, report } = await killHolders({
      fixtures,
      trials: TRIALS,
      lockName: () => `fault-killed-redlock-${process.pid}-${++unique}`,
      holderArgs: (name) => ({
        kind: 'contract',
        backend: backend(),
        name,
        history: fixtures.historyFile(name),
      }),
      take: (name) => waiters.mutex(name).acquire({ waitMs: 2 * LEASE_MS + 10_000 }),
      boundMs: 2 * LEASE_MS + SLACK_MS,
    });
    reportRow({
      row: 'holder-killed',
      backend: 'redlock',
      fault: `a holder process (watchdog lease ${LEASE_MS} ms on 5 masters) SIGKILLed while a client of another process waits (${TRIALS} time${TRIALS > 1 ? 's' : ''})`,
      expected: ['OK', 'LIVE'],
      observed: `nothing released the lock: the waiter, backing off (no wake-ups on Redlock), won a majority once the dead holder's keys expired, ${shownMs(freedAfterMs)} after the kill (bound: the lease + one back-off capped by it + ${SLACK_MS} ms), with a greater token; no overlap`,
      file: FILE,
      checker: report,
      figures: { leaseMs: LEASE_MS, freedAfterMsMax: Math.round(Math.max(...freedAfterMs)) },
    });
  });

  it('a holder SIGSTOPped past its lease — two holders (found), the fence refuses the stale write', async () => {
    const waiters = redlockClient();
    const { report, takenAfterMs, seen } = await pausePastLease({
      fixtures,
      name: `fault-paused-redlock-${process.pid}-${++unique}`,
      backend: backend(),
      resourceUrl: resources.url,
      take: (name) => waiters.mutex(name).acquire({ owner: 'second', waitMs: 2 * LEASE_MS + 10_000 }),
    });
    reportRow({
      row: 'holder-paused',
      backend: 'redlock',
      fault: `a holder process SIGSTOPped past its ${LEASE_MS} ms watchdog lease on 5 masters; another client takes the lock; the holder resumes (SIGCONT) and writes without looking at its signal`,
      expected: ['VIOL', 'F-OK'],
      observed: `the other client won a majority ${Math.round(takenAfterMs)} ms after the stop (the lease ran out on the masters); once resumed, ${seen.words}, and it wrote: two holders, found by the checker; the fenced store refused its stale write (a greater token from the PostgreSQL sequence had written), the unfenced list took it`,
      file: FILE,
      checker: report,
      figures: {
        takenAfterMs: Math.round(takenAfterMs),
        ...(seen.ms === undefined ? {} : { abortedAfterResumeMs: Math.round(seen.ms) }),
      },
    });
  });
});
