import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { PostgresFencedStore } from '../../src/index.js';
import { PostgresServer } from '../../src/servers/index.js';
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
    const events: HistoryEvent[] = [];
    const now = () => String(process.hrtime.bigint());
    const record = (event: Omit<HistoryEvent, 't'>) => events.push({ ...event, t: now() } as HistoryEvent);

    // Tokens 1..5 go by before the fault: the counter stands at 5.
    for (let i = 0; i < 4; i++) await (await env.locks().mutex(name).acquire()).release();
    record({ proc: 'first', type: 'invoke', f: 'acquire', lock: name });
    const first = await env.locks().mutex(name).acquire({ owner: 'first' });
    record({
      proc: 'first',
      type: 'ok',
      f: 'acquire',
      lock: name,
      owner: 'first',
      token: first.fencingToken,
    });
    expect(await store.write(name, 'first', first)).toBe(true);
    record({
      src: 'resource',
      proc: 'resource',
      type: 'ok',
      f: 'write',
      res: name,
      token: first.fencingToken,
      owner: 'first',
    });

    await env.server.restart(); // no persistence: the lock and its fencing counter are gone

    record({ proc: 'second', type: 'invoke', f: 'acquire', lock: name });
    const second = await env.locks().mutex(name).acquire({ owner: 'second', waitMs: 10_000 });
    record({
      proc: 'second',
      type: 'ok',
      f: 'acquire',
      lock: name,
      owner: 'second',
      token: second.fencingToken,
    });
    expect(second.fencingToken).toBeLessThan(first.fencingToken); // the counter started over

    // Both write: the old holder (unaware: its renewal has not run yet) and the new one, lower token.
    expect(await store.write(name, 'first again', first)).toBe(true); // still the newest token it knows
    record({
      src: 'resource',
      proc: 'resource',
      type: 'ok',
      f: 'write',
      res: name,
      token: first.fencingToken,
      owner: 'first',
    });
    expect(await store.write(name, 'second', second)).toBe(false); // refused: its token is lower
    record({
      src: 'resource',
      proc: 'resource',
      type: 'fail',
      f: 'write',
      res: name,
      token: second.fencingToken,
      owner: 'second',
      error: 'fence',
    });
    record({ proc: 'first', type: 'invoke', f: 'release', lock: name });
    record({ proc: 'first', type: 'ok', f: 'release', lock: name, outcome: await first.release() });
    record({ proc: 'second', type: 'invoke', f: 'release', lock: name });
    record({ proc: 'second', type: 'ok', f: 'release', lock: name, outcome: await second.release() });

    const report = checkLockHistory(events);
    expect(report.checks.exclusion.valid).toBe(false); // two believed holders at once: found
    expect(report.checks.tokens.violations).toEqual([
      { lock: name, earlier: `first@${first.fencingToken}`, later: `second@${second.fencingToken}` },
    ]);
    expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
    expect(await store.read(name)).toBe('first again');
  });
});
