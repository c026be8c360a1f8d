import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { PostgresServer, RedisServer, startRedisServers } from '@lockstock/servers';
import { PostgresTokenSource, RedlockClient } from '../../src/index.js';
import { useFixtures } from '../helpers/crash.js';
import { fullFaultSuite, reportRow } from '../helpers/fault-report.js';
import { killHolders, shownMs } from '../helpers/killed-holder.js';

/**
 * Fault row "holder killed" (RELIABILITY.md §3.2 row 1) on Redlock: five independent masters, fencing
 * tokens from a PostgreSQL sequence (PostgresTokenSource). A holder process (fixtures/fault-holder.mjs)
 * holds the mutex on a majority with a watchdog-renewed lease and is SIGKILLed while a client of this
 * process waits. Redlock has no wake-ups: the waiter backs off with full jitter capped by the holder's
 * lease, so the lock passes on within the lease (the dead holder's keys expiring on every master) plus
 * one back-off — plus slack for a loaded machine; lockstock/checker reads the merged history.
 */
const FILE = 'test/faults/redlock-holder-killed.test.ts';
/** The holder's watchdog timeout, its lease on each master (above the clients' 1 s node timeout). */
const LEASE_MS = 2_000;
const SLACK_MS = 2_000;
const TRIALS = fullFaultSuite() ? 5 : 1;

let masters: RedisServer[];
let postgres: PostgresServer;
let pool: pg.Pool;
const clients: RedlockClient[] = [];
const fixtures = useFixtures();
let unique = 0;

beforeAll(async () => {
  [masters, postgres] = await Promise.all([startRedisServers(5), PostgresServer.start()]);
  pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
  pool.on('error', () => undefined); // idle connections see the server stop at the end
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await pool?.end();
  await Promise.all([...(masters ?? []).map((m) => m.stop()), postgres?.stop()]);
});

describe('lock faults on Redlock: holder killed', () => {
  it('a SIGKILLed holder’s lock passes on once its lease has ended on the masters, no overlap', async () => {
    const waiters = new RedlockClient({
      nodes: masters.map((m) => m.url),
      fencing: new PostgresTokenSource(pool),
      nodeTimeoutMs: 1_000, // as the holder's (test/contract/subjects.mjs): a loaded machine is slow
    });
    clients.push(waiters);
    const { freedAfterMs, report } = await killHolders({
      fixtures,
      trials: TRIALS,
      lockName: () => `fault-killed-redlock-${process.pid}-${++unique}`,
      holderArgs: (name) => ({
        kind: 'contract',
        backend: {
          kind: 'redlock',
          urls: masters.map((m) => m.url),
          databaseUrl: postgres.url,
          watchdogTimeoutMs: LEASE_MS,
        },
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
});
