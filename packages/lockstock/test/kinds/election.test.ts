import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '@lockstock/servers';
import { LockLostError, RedisLockClient, RedlockClient, UnsupportedLockKindError } from '../../src/index.js';
import { forkFixtures } from '../helpers/processes.js';

let server: RedisServer;
const clients: RedisLockClient[] = [];
const client = (options: { watchdogTimeoutMs?: number } = {}) => {
  const made = new RedisLockClient({ redis: server.url, ...options });
  clients.push(made);
  return made;
};
let unique = 0;
const electionName = () => `election-${process.pid}-${++unique}`;

beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server.stop();
});

describe('leader election on Redis', () => {
  it('one leader at a time; the next candidate leads after a resign, with a greater token', async () => {
    const name = electionName();
    const [a, b] = [client(), client()];
    expect(await a.election(name).leader()).toBeUndefined();
    const first = await a.election(name).campaign('node-a');
    const second = b.election(name).campaign('node-b', { waitMs: 10_000 });
    expect(await b.election(name).leader()).toEqual({ value: 'node-a', fencingToken: first.fencingToken });
    await first.resign();
    const term = await second;
    expect(term.value).toBe('node-b');
    expect(term.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await a.election(name).leader()).toEqual({ value: 'node-b', fencingToken: term.fencingToken });
    await term.resign();
    expect(await a.election(name).leader()).toBeUndefined();
  });

  it('an election and a lock of the same name are independent', async () => {
    const name = electionName();
    const c = client();
    const hold = await c.mutex(name).acquire();
    // The lock held does not stand in the campaign's way, nor does the term in the lock's.
    const term = await c.election(name).campaign('x', { waitMs: 1_000 });
    expect(await c.election(name).leader()).toEqual({ value: 'x', fencingToken: term.fencingToken });
    expect(await c.mutex(name).inspect()).toMatchObject({ held: true, holders: 1 });
    // Resigning leaves the lock held; releasing the lock leaves the next term in office.
    await term.resign();
    expect(hold.signal.aborted).toBe(false);
    expect(await c.mutex(name).inspect()).toMatchObject({ held: true });
    const next = await c.election(name).campaign('y', { waitMs: 1_000 });
    expect(await hold.release()).toBe('released');
    expect(next.signal.aborted).toBe(false);
    expect(await c.election(name).leader()).toEqual({ value: 'y', fencingToken: next.fencingToken });
    expect(await c.mutex(name).inspect()).toMatchObject({ held: false });
    await next.resign();
  });

  it('observers see every change of leader, once each', async () => {
    const name = electionName();
    const c = client();
    const seen: Array<string | undefined> = [];
    const stop = c.election(name).observe((leader) => seen.push(leader?.value), { intervalMs: 20 });
    await expect.poll(() => seen).toEqual([undefined]);
    const term = await c.election(name).campaign('one');
    await expect.poll(() => seen).toEqual([undefined, 'one']);
    await term.resign();
    await expect.poll(() => seen).toEqual([undefined, 'one', undefined]);
    stop();
  });

  it('a term whose lease is taken away ends: its signal aborts with LockLostError', async () => {
    const name = electionName();
    const c = client({ watchdogTimeoutMs: 300 });
    const term = await c.election(name).campaign('doomed');
    const other = client();
    // The term's key vanishes behind its back (an operator, a failover without the key): the next
    // renewal finds it gone.
    await other.redis.del(`ls:election:{${name}}`);
    await expect.poll(() => term.signal.aborted, { timeout: 5_000 }).toBe(true);
    expect(term.signal.reason).toBeInstanceOf(LockLostError);
  });

  it('a killed leader is replaced within its lease, by a candidate in another process', async () => {
    const name = electionName();
    const backend = { kind: 'redis', url: server.url, watchdogTimeoutMs: 600 };
    const [leader] = forkFixtures('candidate.mjs', [[JSON.stringify({ backend, name, value: 'fixture' })]]);
    const { fencingToken } = await leader!.next('leading');
    const c = client();
    expect(await c.election(name).leader()).toEqual({ value: 'fixture', fencingToken });
    leader!.kill('SIGKILL');
    const term = await c.election(name).campaign('successor', { waitMs: 10_000 });
    expect(term.value).toBe('successor');
    expect(term.fencingToken).toBeGreaterThan(fencingToken as number);
    await term.resign();
  });

  it('Redlock offers no election, and says why', () => {
    const redlock = new RedlockClient({ nodes: [server.url] });
    expect(() => redlock.election('e')).toThrow(UnsupportedLockKindError);
    void redlock.close();
  });
});
