import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLockHistory } from '../../src/checker/index.js';
import { PostgresFencedStore } from '../../src/index.js';
import { PostgresServer } from '@lockstock/servers';
import { reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();
let postgres: PostgresServer;
let db: pg.Client;

beforeAll(async () => {
  postgres = await PostgresServer.start();
  db = new pg.Client({ connectionString: postgres.url });
  db.on('error', () => undefined); // it sees the server stop at the end
  await db.connect();
});
afterAll(async () => {
  await db?.end().catch(() => undefined);
  await postgres?.stop();
});

/**
 * Fault row "server restart without persistence" (RELIABILITY.md §3): Redis restarts empty under a
 * held lock. The lock is gone, so a second client takes it while the first still holds its handle;
 * and the fencing counter is gone too, so the second holder's token goes BACK. A lease lock on a
 * non-persisting Redis cannot prevent either: the checker must find both (the double holding and the
 * token regression), and the fenced resource — PostgreSQL, which kept its state — must still accept
 * no stale write. The price is liveness: the new holder's lower token is refused at the resource until
 * the counter passes the old one (the owner half of the fence keeps an equal token from being taken).
 */
describe('fault: Redis restarts without persistence under a held lock', () => {
  it('the checker finds the double holding and the token going back; the resource stays safe', async () => {
    const name = 'fault-restart';
    const store = new PostgresFencedStore<string>(db);
    await store.migrate();
    const history = new HistoryRecorder();

    // Tokens 1..5 go by before the fault: the counter stands at 5.
    for (let i = 0; i < 4; i++) await (await env.locks().mutex(name).acquire()).release();
    const first = await history.acquire('first', name, () =>
      env.locks().mutex(name).acquire({ owner: 'first' }),
    );
    expect(await history.write(store, name, 'first', first)).toBe(true);

    await env.server.restart(); // no persistence: the lock and its fencing counter are gone

    const second = await history.acquire('second', name, () =>
      env.locks().mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
    );
    expect(second.fencingToken).toBeLessThan(first.fencingToken); // the counter started over

    // Both write: the old holder (unaware: its renewal has not run yet) and the new one, lower token.
    expect(await history.write(store, name, 'first again', first)).toBe(true); // the newest it knows
    expect(await history.write(store, name, 'second', second)).toBe(false); // refused: lower token
    await history.release('first', name, first);
    await history.release('second', name, second);

    const report = checkLockHistory(history.events);
    expect(report.checks.exclusion.valid).toBe(false); // two believed holders at once: found
    expect(report.checks.tokens.violations).toEqual([
      { lock: name, earlier: `first@${first.fencingToken}`, later: `second@${second.fencingToken}` },
    ]);
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    expect(await store.read(name)).toBe('first again');
    reportRow({
      row: 'restart-empty',
      backend: 'redis',
      fault: 'redis-server SIGKILLed and restarted at once without persistence under a held lock',
      expected: ['VIOL', 'F-OK'],
      observed:
        "two believed holders at once and the fencing token going back (the counter started over), both found; the resource (PostgreSQL) accepted nothing stale — the new holder's lower token was refused until the counter passes the old one (safety kept, liveness lost)",
      file: 'test/faults/restart-without-persistence.test.ts',
      checker: report,
    });
  });
});
