import * as zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperServer } from '@lockstock/servers';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';
import { encodeName } from '../../src/zookeeper/paths.js';
import { ZOOKEEPER_TICK_MS } from '../contract/backends.js';
import { adminClient, countCalls, queueOf } from '../helpers/zookeeper.js';

/**
 * A lock this client had to itself is taken again without listing its queue (src/zookeeper/quiet.ts):
 * only when the new node's sequence proves nobody created a child since. Each test here would fail
 * if the rule skipped a listing it must not: another client's node in the queue, or a parent deleted
 * and made again (its counter restarted) so that the sequence matches by chance.
 */
let server: ZooKeeperServer;
let admin: Client;
const clients: ZooKeeperLockClient[] = [];
const client = () => {
  const made = new ZooKeeperLockClient({ connectString: server.connectString, sessionTimeoutMs: 4_000 });
  clients.push(made);
  return made;
};
let unique = 0;
const lockName = (label: string) => `zk-quiet-${label}-${process.pid}-${++unique}`;
const parentOf = (name: string) => `/lockstock/locks/${encodeName(name)}`;
const call = <T>(run: (done: (error: unknown, value?: T) => void) => void) =>
  new Promise<T>((resolve, reject) =>
    run((error, value) => (error ? reject(error as Error) : resolve(value as T))),
  );
const czxid = async (path: string) =>
  Number((await call<zookeeper.Stat>((done) => admin.exists(path, done))).czxid.readBigInt64BE(0));
/** A queue node of another process, as lockstock names them (protected, typed, sequential). */
const foreignNode = (parent: string) =>
  call<string>((done) =>
    admin.create(
      `${parent}/_c_00000000-0000-4000-8000-000000000000-lock-`,
      Buffer.from('someone'),
      zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
      done,
    ),
  );
const sequenceOf = (path: string) => Number(path.slice(-10));

beforeAll(async () => {
  server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
  admin = await adminClient(server.connectString);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin.close();
  await server.stop();
});

describe('taking a quiet lock again without listing its queue', () => {
  it("the server's counter: every create of a child moves it on, a delete does not (ZooKeeper 3.8)", async () => {
    // The rule's one premise is the first half; the second is why it saves anything on this server.
    await call((done) => admin.mkdirp('/counter', done));
    const first = await call<string>((done) =>
      admin.create('/counter/n-', Buffer.alloc(0), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done),
    );
    await call((done) =>
      admin.create('/counter/plain', Buffer.alloc(0), zookeeper.CreateMode.EPHEMERAL, done),
    );
    await call((done) => admin.remove(first, -1, done));
    await call((done) => admin.remove('/counter/plain', -1, done));
    const next = await call<string>((done) =>
      admin.create('/counter/n-', Buffer.alloc(0), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, done),
    );
    expect(sequenceOf(next)).toBe(sequenceOf(first) + 2);
  });

  it('skips the listing when nobody came by: one create, one read, one delete; token and watch as before', async () => {
    const locks = client();
    const name = lockName('skip');
    await (await locks.mutex(name).acquire()).release(); // learns the queue is its own
    const counts = countCalls(locks.zookeeper);
    const handle = await locks.mutex(name).acquire();
    const [node] = await queueOf(admin, 'locks', name);
    expect(handle.fencingToken).toBe(await czxid(`${parentOf(name)}/${node}`));
    expect(counts).toMatchObject({ create: 1, getChildren: 0, getData: 1, exists: 0 });
    // The read sent with the create armed the hold's own watch: a forceUnlock aborts its signal.
    const other = client();
    expect(await other.forceUnlock(other.mutex(name))).toBe(true);
    await expect.poll(() => handle.signal.aborted).toBe(true);
    expect(handle.lostError).toMatchObject({ reason: 'expired' });
  });

  it('lists, and waits, when another client queued since: its create moved the counter', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('other');
    await (await a.mutex(name).acquire()).release();
    const held = await b.mutex(name).acquire();
    const counts = countCalls(a.zookeeper);
    let settled = false;
    const waiting = a.mutex(name).acquire({ waitMs: 10_000 });
    void waiting.finally(() => (settled = true));
    // Taken beside b's hold, it would never list: the listing is what shows the rule stood back.
    await expect.poll(() => counts.getChildren).toBeGreaterThan(0);
    await expect.poll(() => queueOf(admin, 'locks', name)).toHaveLength(2);
    expect(settled).toBe(false);
    await held.release();
    const handle = await waiting;
    expect(handle.fencingToken).toBeGreaterThan(held.fencingToken);
    await handle.release();
  });

  it('lists when the parent was deleted and made again with a node whose sequence the client expects', async () => {
    const locks = client();
    const name = lockName('parent');
    const parent = parentOf(name);
    const first = await locks.mutex(name).acquire();
    const [ours] = await queueOf(admin, 'locks', name);
    await first.release(); // the client now expects its next node to be numbered ours + 1
    // An operator removes the empty parent; it is made again, and another process queues in it until
    // the restarted counter reaches the number the client expects for its next node.
    await call((done) => admin.remove(parent, -1, done));
    await call((done) => admin.mkdirp(parent, done));
    let foreign = await foreignNode(parent);
    while (sequenceOf(foreign) < sequenceOf(ours!)) {
      await call((done) => admin.remove(foreign, -1, done));
      foreign = await foreignNode(parent);
    }
    expect(sequenceOf(foreign)).toBe(sequenceOf(ours!)); // the next create gets ours + 1: a match
    // The foreign node holds the lock: the client must wait for it, not take the lock beside it.
    await expect(locks.mutex(name).acquire({ waitMs: 1_500 })).rejects.toThrow();
    await call((done) => admin.remove(foreign, -1, done));
    await (await locks.mutex(name).acquire({ waitMs: 10_000 })).release();
  });
});
