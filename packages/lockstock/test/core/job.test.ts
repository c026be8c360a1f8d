import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { InvalidLockOptionError, runJob } from '../../src/index.js';
import { LocalLockClient } from '../../src/local/index.js';
import { forkFixtures, type Message } from '../helpers/processes.js';

/**
 * Job locks (runJob): nodes in separate processes run one job at most once per window. Every node is
 * told to run at the same time; exactly one runs, the others skip; a round inside minHoldMs after the
 * run skips everywhere (the lock is still held on the store); once the store ends the hold, one runs.
 */
const NODES = 4;
// Generous: round 2 must reach the store inside the window even on a loaded machine.
const MIN_HOLD_MS = 10_000;

let redisServer: RedisServer;
let redis: Redis;
let pgServer: PostgresServer;
let pgPool: pg.Pool;
beforeAll(async () => {
  [redisServer, pgServer] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
  redis = new Redis(redisServer.url);
  pgPool = new pg.Pool({ connectionString: pgServer.url, max: 1 });
  pgPool.on('error', () => undefined); // the idle connection sees the server stop at the end
});
afterAll(async () => {
  redis?.disconnect();
  await pgPool?.end();
  await Promise.all([redisServer?.stop(), pgServer?.stop()]);
});

async function windows(
  backend: object,
  name: string,
  held: () => Promise<boolean>,
  afterFirst?: () => Promise<void>,
) {
  const nodes = forkFixtures(
    'job-runner.mjs',
    Array.from({ length: NODES }, () => [JSON.stringify({ backend, name, minHoldMs: MIN_HOLD_MS })]),
  );
  try {
    await Promise.all(nodes.map((node) => node.next('ready')));
    const round = async (n: number): Promise<Message[]> => {
      for (const node of nodes) node.send({ type: 'run', round: n }); // all told before any is awaited
      return Promise.all(nodes.map((node) => node.next('result')));
    };
    const ran = (results: Message[]) => results.filter((result) => result.ran === true);

    const first = await round(1);
    expect(first.filter((result) => result.error)).toEqual([]);
    expect(ran(first)).toHaveLength(1);
    expect(first.filter((result) => result.ran === false && result.skipped === 'held')).toHaveLength(
      NODES - 1,
    );
    const [winner] = ran(first);
    expect(winner?.tokenSeen).toBe(winner?.fencingToken); // the job was given its fencing token
    expect(await held()).toBe(true); // the fast job is over; the store keeps the lock
    await afterFirst?.();

    const second = await round(2);
    expect(await held()).toBe(true); // (round 2 was inside the window: MIN_HOLD_MS is generous)
    expect(second.filter((result) => result.error)).toEqual([]);
    expect(ran(second)).toEqual([]); // nobody runs it twice in one window

    // The window ends when the store ends the hold (observed, bounded by the test's timeout).
    while (await held()) await sleep(100);
    const third = await round(3);
    expect(ran(third)).toHaveLength(1);
    expect(ran(third)[0]?.fencingToken as number).toBeGreaterThan(winner?.fencingToken as number);
  } finally {
    for (const node of nodes) node.kill();
    await Promise.all(nodes.map((node) => node.exited));
  }
}

describe('runJob: at most once per window across processes', () => {
  it('Redis: the minimum hold is the key lease, shortened on release and ended by Redis', async () => {
    const name = 'job-nightly';
    await windows(
      { kind: 'redis', url: redisServer.url },
      name,
      async () => (await redis.exists(`ls:{${name}}`)) === 1,
      async () => {
        // Shortened to what was left of the minimum (not the 30 s watchdog lease), and not renewed.
        const pttl = await redis.pttl(`ls:{${name}}`);
        expect(pttl).toBeGreaterThan(0);
        expect(pttl).toBeLessThanOrEqual(MIN_HOLD_MS);
      },
    );
  }, 120_000);

  it('PostgreSQL: the session lock is kept for the minimum, then released', async () => {
    const held = async () => {
      const { rows } = await pgPool.query<{ n: string }>(
        "select count(*) as n from pg_locks where locktype = 'advisory' and granted",
      );
      return Number(rows[0]?.n) > 0;
    };
    await windows({ kind: 'postgres', url: pgServer.url }, 'job-nightly', held);
  }, 120_000);
});

describe('runJob: options and failures', () => {
  it('refuses a bad minHoldMs and any wait; a failing job keeps the minimum hold too', async () => {
    const client = new LocalLockClient({ namespace: `job-${process.pid}` });
    try {
      const lock = client.mutex('job-options');
      await expect(runJob(lock, () => 1, { minHoldMs: -1 })).rejects.toBeInstanceOf(InvalidLockOptionError);
      await expect(runJob(lock, () => 1, { waitMs: 10 } as object)).rejects.toBeInstanceOf(
        InvalidLockOptionError,
      );
      const failure = new Error('job failed');
      await expect(runJob(lock, () => Promise.reject(failure), { minHoldMs: 60_000 })).rejects.toBe(failure);
      expect(await runJob(lock, () => 1)).toEqual({ ran: false, skipped: 'held' });
      expect(await lock.isLocked()).toBe(true);
    } finally {
      await client.close();
    }
  });
});
