import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresFencedStore, RedisFencedStore, type FencedStore } from '../../src/index.js';
import { PostgresServer } from '@lockstock/servers';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();
let postgres: PostgresServer;
let pool: pg.Pool;

beforeAll(async () => {
  postgres = await PostgresServer.start();
  pool = new pg.Pool({ connectionString: postgres.url, max: 4 });
  pool.on('error', () => undefined); // idle connections see the server shut down at the end
  await new PostgresFencedStore(pool).migrate();
});
afterAll(async () => {
  await pool.end();
  await postgres.stop();
});

const stores: Array<[string, () => FencedStore<string>]> = [
  ['redis', () => new RedisFencedStore(env.redis)],
  ['postgres', () => new PostgresFencedStore<string>(pool)],
];

describe.each(stores)('fenced store (%s)', (_kind, makeStore) => {
  it('applies the (token, owner) rule', async () => {
    const store = makeStore();
    const key = `rule-${Math.random().toString(36).slice(2)}`;
    expect(await store.write(key, 'a5', { fencingToken: 5, owner: 'a' })).toBe(true);
    expect(await store.write(key, 'a4', { fencingToken: 4, owner: 'a' })).toBe(false); // lower token
    expect(await store.write(key, 'b5', { fencingToken: 5, owner: 'b' })).toBe(false); // same token, other owner
    expect(await store.write(key, 'a5 again', { fencingToken: 5, owner: 'a' })).toBe(true); // same holder
    expect(await store.write(key, 'b6', { fencingToken: 6, owner: 'b' })).toBe(true);
    expect(await store.read(key)).toBe('b6');
  });

  it('claims for a read-modify-write: the older holder that resumes after a newer claim is rejected', async () => {
    const store = makeStore();
    const key = `claim-${Math.random().toString(36).slice(2)}`;
    expect(await store.claim(key, { fencingToken: 1, owner: 'a' })).toEqual({
      granted: true,
      value: undefined,
    });
    expect(await store.write(key, '10', { fencingToken: 1, owner: 'a' })).toBe(true);
    // a (token 2) reads 10 and pauses; b (token 3) reads 10 too. Without b's claim, a's resumed
    // write of 9 would be accepted (3 not seen yet) and b's 9 would overwrite it: one unit sold twice.
    expect(await store.claim(key, { fencingToken: 2, owner: 'a' })).toEqual({ granted: true, value: '10' });
    expect(await store.claim(key, { fencingToken: 3, owner: 'b' })).toEqual({ granted: true, value: '10' });
    expect(await store.write(key, '9', { fencingToken: 2, owner: 'a' })).toBe(false);
    expect(await store.write(key, '9', { fencingToken: 3, owner: 'b' })).toBe(true);
    // Stale or foreign claims change nothing.
    expect(await store.claim(key, { fencingToken: 2, owner: 'a' })).toEqual({ granted: false });
    expect(await store.claim(key, { fencingToken: 3, owner: 'c' })).toEqual({ granted: false });
    expect(await store.write(key, '8', { fencingToken: 3, owner: 'b' })).toBe(true);
    expect(await store.read(key)).toBe('8');
  });

  it('rejects the write of a holder whose lease ran out while it paused', async () => {
    const store = makeStore();
    const key = `pause-${Math.random().toString(36).slice(2)}`;
    const lock = env.locks().mutex(`fenced-${key}`);
    const slow = await lock.acquire({ leaseMs: 100 });
    await new Promise((resolve) => slow.signal.addEventListener('abort', resolve)); // "GC pause" past the lease
    const fast = await lock.acquire({ waitMs: 5_000 });
    expect(fast.fencingToken).toBeGreaterThan(slow.fencingToken);
    expect(await store.write(key, 'from fast', fast)).toBe(true);
    expect(await store.write(key, 'from slow', slow)).toBe(false); // the stale holder resumes: rejected
    expect(await store.read(key)).toBe('from fast');
    await fast.release();
  });
});
