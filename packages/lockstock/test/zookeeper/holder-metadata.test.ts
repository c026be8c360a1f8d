import { hostname } from 'node:os';
import * as zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperServer } from '@lockstock/servers';
import type { LockHolderInfo } from '../../src/index.js';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';
import { lockPath, protectedPrefix, type Family } from '../../src/zookeeper/paths.js';
import { ZOOKEEPER_TICK_MS } from '../contract/backends.js';
import { adminClient } from '../helpers/zookeeper.js';

// Holder metadata on ZooKeeper (issue 37) lives in the data of each holder's node, written with its
// create (src/zookeeper/holders.ts). What is checked here is what ZooKeeper holds, read with a plain
// driver client, and that nodes written before records were kept (the owner alone) are still read
// as their owner: by inspect() and by an election's leader().
let server: ZooKeeperServer;
let admin: Client;
const clients: ZooKeeperLockClient[] = [];
const client = () => {
  const made = new ZooKeeperLockClient({ connectString: server.connectString, sessionTimeoutMs: 4_000 });
  clients.push(made);
  return made;
};
let unique = 0;
const lockName = (label: string) => `zk-hm-${label}-${process.pid}-${++unique}`;

const call = <T>(fn: (done: (error: unknown, value: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) =>
    fn((error, value) =>
      error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(value),
    ),
  );

/** The data of a queue's nodes, in sequence order, as ZooKeeper has it. */
async function nodeData(family: Family, name: string, below = ''): Promise<string[]> {
  const parent = `${lockPath('/lockstock', family, name)}${below}`;
  const children = await call<string[]>((done) => admin.getChildren(parent, done));
  const sorted = [...children].sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)));
  return Promise.all(
    sorted.map(async (child) =>
      (await call<Buffer>((done) => admin.getData(`${parent}/${child}`, done))).toString(),
    ),
  );
}

/** A node as an earlier build made it: ephemeral, sequential, the owner alone as data. */
async function oldNode(family: Family, name: string, type: string, owner: string): Promise<string> {
  const parent = lockPath('/lockstock', family, name);
  await call((done) => admin.mkdirp(parent, done));
  return call<string>((done) =>
    admin.create(
      `${parent}/${protectedPrefix(type)}`,
      Buffer.from(owner),
      zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
      done,
    ),
  );
}

const removeNode = (path: string) =>
  call<undefined>((done) => admin.remove(path, (error) => done(error, undefined)));

const byOwner = (heldBy: readonly LockHolderInfo[] | undefined) =>
  [...(heldBy ?? [])].sort((x, y) => x.owner.localeCompare(y.owner));

beforeAll(async () => {
  server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
  admin = await adminClient(server.connectString);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin.close();
  await server.stop();
});

describe('ZooKeeper holder metadata: in the data of the holder’s node', () => {
  it('declares every family with holders (spin and the counter semaphore are not offered)', () => {
    expect(client().backend.capabilities.holderMetadata).toEqual([
      'mutex',
      'reentrant',
      'fair',
      'read-write',
      'semaphore',
    ]);
  });

  it('a node’s data is the record; a waiter’s is from the attempt that queued it', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('mutex');
    const first = await a.mutex(name).acquire({ label: 'first' });
    const [data] = await nodeData('locks', name);
    expect(JSON.parse(data!)).toMatchObject({ owner: first.owner, host: hostname(), pid: process.pid });
    const waiting = b.mutex(name).acquire({ label: 'second', waitMs: 20_000 });
    await expect.poll(() => nodeData('locks', name)).toHaveLength(2);
    const queuedBy = Date.now();
    await first.release();
    const second = await waiting;
    const [holder] = (await a.mutex(name).inspect()).heldBy ?? [];
    expect(holder).toMatchObject({ owner: second.owner, label: 'second', pid: process.pid });
    // acquiredAt is when the attempt that created the node was made: before it held (it queued).
    expect(holder!.acquiredAt).toBeLessThanOrEqual(queuedBy);
    await second.release();
    expect((await a.mutex(name).inspect()).heldBy).toEqual([]);
  });

  it('read-write and semaphore: every holder named, a downgrade’s read node carries its own record', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('rw');
    const write = await a.readWrite(name).write.acquire({ owner: 'owner', label: 'writing' });
    expect((await b.readWrite(name).write.inspect()).heldBy).toMatchObject([
      { owner: 'owner', label: 'writing', host: hostname(), pid: process.pid },
    ]);
    expect((await b.readWrite(name).read.inspect()).heldBy).toEqual([]);
    const read = await a.readWrite(name).read.acquire({ owner: 'owner', label: 'reading' });
    expect(await write.release()).toBe('released');
    const other = await b.readWrite(name).read.acquire({ owner: 'second', label: 'also-reading' });
    expect(byOwner((await b.readWrite(name).read.inspect()).heldBy)).toMatchObject([
      { owner: 'owner', label: 'reading' },
      { owner: 'second', label: 'also-reading', pid: process.pid },
    ]);
    expect((await b.readWrite(name).write.inspect()).heldBy).toEqual([]);
    await Promise.all([read.release(), other.release()]);

    const permits = lockName('semaphore');
    const held = await Promise.all([
      a.semaphore(permits, { permits: 2 }).acquire({ owner: 'p1', label: 'one' }),
      b.semaphore(permits, { permits: 2 }).acquire({ owner: 'p2', label: 'two' }),
    ]);
    const info = await a.semaphore(permits, { permits: 2 }).inspect();
    expect(info.holders).toBe(2);
    expect(byOwner(info.heldBy)).toMatchObject([
      { owner: 'p1', label: 'one' },
      { owner: 'p2', label: 'two' },
    ]);
    await Promise.all(held.map((hold) => hold.release()));
    expect((await a.semaphore(permits, { permits: 2 }).inspect()).heldBy).toEqual([]);
  });

  it('a node of an earlier build (the owner alone) is read as its owner: inspect() and leader()', async () => {
    const c = client();
    const mutex = lockName('old-mutex');
    const path = await oldNode('locks', mutex, 'lock', 'old-holder');
    expect(await c.mutex(mutex).tryAcquire()).toBeUndefined();
    expect(await c.mutex(mutex).inspect()).toMatchObject({ held: true, heldBy: [{ owner: 'old-holder' }] });
    await removeNode(path);

    // Data that is JSON but no record (an owner id that looks like one) is the owner, whole.
    const odd = lockName('odd-owner');
    await oldNode('locks', odd, 'lock', '{"not":"a record"}');
    expect((await c.mutex(odd).inspect()).heldBy).toEqual([{ owner: '{"not":"a record"}' }]);

    // An election whose leader is an older client's candidate: its owner id is `<id>|<value>`.
    const election = lockName('old-election');
    const leaderNode = await oldNode('elections', election, 'lock', 'someid|old-leader');
    const leader = await c.election(election).leader();
    expect(leader?.value).toBe('old-leader');
    // A newer candidate queues behind it and leads once it is gone, its value read from its record.
    const term = c.election(election).campaign('new-leader', { waitMs: 20_000 });
    await expect.poll(() => nodeData('elections', election)).toHaveLength(2);
    expect((await c.election(election).leader())?.value).toBe('old-leader');
    await removeNode(leaderNode);
    const won = await term;
    expect((await c.election(election).leader())?.value).toBe('new-leader');
    await won.resign();
  });
});
