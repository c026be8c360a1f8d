import { Redis } from 'ioredis';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  LockLostError,
  PostgresFencedStore,
  QuorumUnavailableError,
  RedlockClient,
  type Lock,
} from '../../src/index.js';
import { useRedlockBackend } from '../contract/backends.js';
import { lockContract } from '../contract/contract.js';
import { countedRedis } from '../helpers/counted-redis.mjs';

const backend = useRedlockBackend();

// The same contract as every other lock, on five independent masters.
lockContract(backend, ['mutex']);

const client = (options: { watchdogTimeoutMs?: number } = {}) =>
  backend.client(options) as unknown as RedlockClient;
const masters = () => backend.servers;

async function withMastersDown<T>(count: number, fn: () => Promise<T>): Promise<T> {
  const down = masters().slice(0, count);
  await Promise.all(down.map((m) => m.kill()));
  try {
    return await fn();
  } finally {
    await Promise.all(down.map((m) => m.restart()));
  }
}

describe('Redlock quorum', () => {
  it('works with 2 of 5 masters down and refuses cleanly, with every vote, with 3 down', async () => {
    const lock: Lock = client().mutex('rl-quorum');
    await withMastersDown(2, async () => {
      const handle = await lock.acquire({ waitMs: 2_000 });
      expect(handle.fencingToken).toBeGreaterThan(0);
      expect(await handle.release()).toBe('released');
    });
    await withMastersDown(3, async () => {
      const error = await lock.acquire({ waitMs: 2_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QuorumUnavailableError);
      const votes = (error as QuorumUnavailableError).votes;
      expect(votes).toHaveLength(5);
      expect(votes.filter((v) => v.vote === 'error')).toHaveLength(3);
      expect(votes.filter((v) => v.vote === 'yes')).toHaveLength(2);
      // What it got was given back: neither live master holds a vote (the Redlock key layout).
      const live = masters().slice(3);
      for (const master of live) {
        const redis = new Redis(master.url);
        expect(await redis.exists('ls:{rl-quorum}:redlock')).toBe(0);
        redis.disconnect();
      }
    });
    expect(await lock.isLocked()).toBe(false);
  });

  it('tells "held by someone" (a timeout) from "masters down"', async () => {
    const [a, b] = [client(), client()];
    const held = await a.mutex('rl-held').acquire();
    await expect(b.mutex('rl-held').acquire({ waitMs: 100 })).rejects.toMatchObject({
      code: 'ERR_LOCK_TIMEOUT',
    });
    await held.release();
  });

  it('a waiter backs off when the masters hold the key without expiry (PTTL -1)', async () => {
    const name = 'rl-persisted';
    const raw = masters().map((m) => new Redis(m.url));
    const counted = masters().map((m) => countedRedis(m.url));
    const locks = new RedlockClient({ nodes: counted.map((c) => c.redis), nodeTimeoutMs: 1_000 });
    try {
      // Left by another tool (or PERSISTed): held, with no lease to wait out.
      await Promise.all(raw.map((r) => r.set(`ls:{${name}}:redlock`, 'someone-else')));
      const waitMs = 1_000;
      await expect(locks.mutex(name).acquire({ waitMs })).rejects.toMatchObject({ code: 'ERR_LOCK_TIMEOUT' });
      // Jittered exponential back-off (2 ms doubling to 128 ms) allows ~20 tries a second; the bug
      // retried at once, ~300-700 scripts per master in that time.
      for (const node of counted) expect(node.sent).toBeLessThan(60);
    } finally {
      await locks.close();
      await Promise.all(raw.map((r) => r.del(`ls:{${name}}:redlock`)));
      for (const r of raw) r.disconnect();
      for (const c of counted) c.redis.disconnect();
    }
  });

  it('a long hold survives rolling restarts of the masters without persistence', async () => {
    const locks = client({ watchdogTimeoutMs: 1_800 }); // renewed every 600 ms: a stall under 1.2 s is survived
    const name = 'rl-rolling';
    const key = `ls:{${name}}:redlock`;
    const handle = await locks.mutex(name).acquire();
    const renewals = () => new Promise<void>((resolve) => locks.once('renewed', () => resolve()));
    // Each master in turn restarts empty: a majority holds the lock at every moment, but without
    // re-taking the vote where it was lost, the holder would be down to 2 of 5 after three restarts.
    for (const master of masters().slice(0, 4)) {
      await master.restart();
      const redis = new Redis(master.url);
      try {
        let back = 0;
        for (let i = 0; i < 20 && back === 0; i++) {
          await renewals(); // a renewal after the restart (ioredis may still be reconnecting)
          back = await redis.exists(key);
        }
        expect(back).toBe(1); // the renewal took the vote again on the restarted master
      } finally {
        redis.disconnect();
      }
    }
    expect(handle.signal.aborted).toBe(false);
    expect(await handle.release()).toBe('released');
  });

  it('a holder that loses its majority learns it on the next extend', async () => {
    const locks = client({ watchdogTimeoutMs: 600 });
    const handle = await locks.mutex('rl-lost').acquire();
    await withMastersDown(3, async () => {
      await new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
    });
    expect(handle.lostError).toBeInstanceOf(LockLostError);
  });

  it('a holder paused past its lease is refused by the fenced resource', async () => {
    // One client with its own error listener: it sees the server stop at the end of the file.
    const db = new pg.Client({ connectionString: (backend.config() as { databaseUrl: string }).databaseUrl });
    db.on('error', () => undefined);
    await db.connect();
    try {
      const store = new PostgresFencedStore<number>(db);
      await store.migrate();
      const [a, b] = [client(), client()];
      const stale = await a.mutex('rl-fenced').acquire({ leaseMs: 200 });
      // The holder stalls (GC, SIGSTOP) past its lease; meanwhile another client takes the lock.
      const fresh = await b.mutex('rl-fenced').acquire({ waitMs: 5_000 });
      expect(stale.signal.aborted).toBe(true); // it would know, if it looked
      expect(fresh.fencingToken).toBeGreaterThan(stale.fencingToken);
      expect(await store.write('rl-fenced', 2, fresh)).toBe(true);
      expect(await store.write('rl-fenced', 1, stale)).toBe(false); // the resource refuses the stale holder
      expect(await store.read('rl-fenced')).toBe(2);
      await fresh.release();
    } finally {
      await db.end();
    }
  });
});
