import type { Client } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperServer } from '@lockstock/servers';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';
import { ZOOKEEPER_TICK_MS } from '../contract/backends.js';
import { killAndTime, useFixtures } from '../helpers/crash.js';
import { fencedRead, fencedWrite } from '../helpers/zk-fence.mjs';
import { adminClient, queueOf } from '../helpers/zookeeper.js';

/**
 * The ZooKeeper backend across OS processes, with real faults: SIGKILLed holders, waiters and
 * leaders, a holder paused (SIGSTOP) past its session timeout, and the wake-ups a release causes,
 * counted by each waiter process on its own driver client. Bounds are the session timeout plus what
 * the server takes to expire a session (it looks every tick: 250 ms here), with room for a loaded
 * machine; the checks are on what the processes and the server recorded.
 */
let server: ZooKeeperServer;
let admin: Client;
const clients: ZooKeeperLockClient[] = [];
const client = () => {
  const made = new ZooKeeperLockClient({ connectString: server.connectString, sessionTimeoutMs: 10_000 });
  clients.push(made);
  return made;
};
const backend = (sessionTimeoutMs: number) => ({
  kind: 'zookeeper',
  connectString: server.connectString,
  sessionTimeoutMs,
});
let unique = 0;
const lockName = (label: string) => `crash-${label}-${process.pid}-${++unique}`;
/** How late the server may expire a session after its timeout (a tick), and a loaded machine. */
const EXPIRY_SLACK_MS = 1_500;

const fixtures = useFixtures();
const fork = (name: string, args: object) => fixtures.fork(name, args);

beforeAll(async () => {
  server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
  admin = await adminClient(server.connectString);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin.close();
  await server.stop();
});

describe('ZooKeeper locks across OS processes', () => {
  it('a SIGKILLed holder’s lock is free once its session timeout has run out', async () => {
    const measured: string[] = [];
    for (const sessionTimeoutMs of [1_000, 2_000]) {
      const name = lockName(`killed-holder-${sessionTimeoutMs}`);
      const holder = fork('holder.mjs', {
        backend: backend(sessionTimeoutMs),
        subject: 'mutex',
        name,
        mode: 'session',
        holds: 1,
      });
      const { tokens } = await holder.next('acquired');
      const waiting = client()
        .mutex(name)
        .acquire({ waitMs: sessionTimeoutMs + 5_000 });
      await expect.poll(() => queueOf(admin, 'locks', name)).toHaveLength(2);
      const { result: handle, freedAfterMs } = await killAndTime(holder, waiting);
      measured.push(`${sessionTimeoutMs} ms session: ${Math.round(freedAfterMs)} ms`);
      expect(handle.fencingToken).toBeGreaterThan((tokens as number[])[0]!);
      expect(freedAfterMs).toBeLessThanOrEqual(sessionTimeoutMs + EXPIRY_SLACK_MS);
      await handle.release();
    }
    console.info(`killed holder's lock free after: ${measured.join(', ')}`);
  });

  it('a SIGKILLed waiter does not stall the queue: the next waiter gets the lock after its session', async () => {
    const name = lockName('killed-waiter');
    const holder = await client().mutex(name).acquire();
    const dead = fork('waiter.mjs', { backend: backend(1_000), subject: 'mutex', name });
    await dead.next('waiting');
    await expect.poll(() => queueOf(admin, 'locks', name)).toHaveLength(2);
    const next = client().mutex(name).acquire({ waitMs: 10_000 });
    await expect.poll(() => queueOf(admin, 'locks', name)).toHaveLength(3);
    dead.kill('SIGKILL');
    await dead.exited;
    const killedAt = performance.now();
    await holder.release(); // the live waiter's predecessor is now the dead one's node
    const handle = await next;
    expect(performance.now() - killedAt).toBeLessThanOrEqual(1_000 + EXPIRY_SLACK_MS);
    expect(await queueOf(admin, 'locks', name)).toHaveLength(1); // the dead waiter's node went with its session
    await handle.release();
  });

  it('a holder paused past its session learns it lost the lock through its signal; the fence refuses its write', async () => {
    const name = lockName('paused');
    const resource = `/resources/${name}`;
    const paused = fork('zk-paused-holder.mjs', {
      connectString: server.connectString,
      sessionTimeoutMs: 1_000,
      name,
      resource,
    });
    const { token: pausedToken } = await paused.next('holding');
    paused.kill('SIGSTOP');
    // Another client asks at once: it gets the lock when the server has expired the paused session.
    const second = await client().mutex(name).acquire({ waitMs: 10_000 });
    expect(second.fencingToken).toBeGreaterThan(pausedToken as number);
    expect(await fencedWrite(admin, resource, second.fencingToken, 'from second')).toBe(true);
    const resumedAt = process.hrtime.bigint();
    paused.kill('SIGCONT');
    paused.send({ type: 'write' });
    const done = await paused.next('done');
    expect(done.reason).toBe('session_lost'); // its signal aborted once resumed…
    expect(BigInt(done.abortedAt as string)).toBeGreaterThan(resumedAt); // …not before (it was stopped)
    console.info(
      `paused holder's signal aborted ${Number(BigInt(done.abortedAt as string) - resumedAt) / 1e6} ms after SIGCONT (${String(done.cause)})`,
    );
    expect(done.accepted).toBe(false); // the fence saw the second holder's greater token
    expect(done.outcome).toBe('expired');
    expect(await fencedRead(admin, resource)).toEqual({ token: second.fencingToken, value: 'from second' });
    await second.release();
  });

  it('a release wakes exactly one waiter: its successor in the queue, in arrival order', async () => {
    const name = lockName('wake-ups');
    const holder = await client().mutex(name).acquire();
    const waiters = Array.from({ length: 4 }, () =>
      fork('zk-waiter.mjs', { connectString: server.connectString, name }),
    );
    await Promise.all(waiters.map((w) => w.next('ready')));
    // Queued one after the other, so the queue's order is known.
    for (const waiter of waiters) {
      waiter.send({ type: 'go' });
      await waiter.next('queued');
    }
    expect(await queueOf(admin, 'locks', name)).toHaveLength(1 + waiters.length);
    await holder.release();
    // Each waiter releases as soon as it holds: four releases, each watched by one waiter only.
    const acquired = await Promise.all(waiters.map((w) => w.next('acquired')));
    // Between being queued and holding, each waiter listed the queue once (the look that found it
    // first) and read its node's czxid: one release, one waiter woken — no herd.
    expect(acquired.map((a) => a.lists)).toEqual(waiters.map(() => 1));
    expect(acquired.map((a) => a.requests)).toEqual(waiters.map(() => 2));
    const tokens = acquired.map((a) => a.token as number);
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y)); // granted in arrival order
    expect(tokens[0]).toBeGreaterThan(holder.fencingToken);
    console.info(`waiters woken per release: ${acquired.map((a) => a.lists).join(', ')} (4 releases)`);
  });
});

describe('ZooKeeper leader election across OS processes', () => {
  it('a SIGKILLed leader is replaced by a candidate in another process, with a greater token', async () => {
    const name = lockName('election');
    const leader = fork('candidate.mjs', { backend: backend(1_000), name, value: 'fixture' });
    const { fencingToken } = await leader.next('leading');
    const c = client();
    expect(await c.election(name).leader()).toEqual({ value: 'fixture', fencingToken });
    const successor = c.election(name).campaign('successor', { waitMs: 10_000 });
    await expect.poll(() => queueOf(admin, 'elections', name)).toHaveLength(2);
    leader.kill('SIGKILL');
    const term = await successor;
    expect(term.fencingToken).toBeGreaterThan(fencingToken as number);
    expect(await c.election(name).leader()).toEqual({ value: 'successor', fencingToken: term.fencingToken });
    await term.resign();
  });
});
