import { hostname } from 'node:os';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer } from '@lockstock/servers';
import type { LockHolderInfo } from '../../src/index.js';
import { EtcdLockClient } from '../../src/etcd/index.js';

// Holder metadata on etcd (issue 37) lives in the value of each holder's key, after its mode
// (src/etcd/value.ts). What is checked here is what etcd holds, read with a plain etcd3 client, and
// that keys of the value form written before records were kept ('', 'w', 'r') are still read right.
let server: EtcdServer;
let admin: Etcd3;
const clients: EtcdLockClient[] = [];
const client = () => {
  const made = new EtcdLockClient({ hosts: server.endpoint, sessionTtlSeconds: 10 });
  clients.push(made);
  return made;
};
let unique = 0;
const lockName = (label: string) => `etcd-hm-${label}-${process.pid}-${++unique}`;
const dirOf = (name: string, family: string) => `ls/${encodeURIComponent(name)}/${family}/`;

/** The values of a lock's queue keys, oldest first. */
async function values(name: string, family: string): Promise<string[]> {
  const kvs = await admin.getAll().prefix(dirOf(name, family)).sort('Create', 'Ascend').exec();
  return kvs.kvs.map((kv) => kv.value.toString());
}

const byOwner = (heldBy: readonly LockHolderInfo[] | undefined) =>
  [...(heldBy ?? [])].sort((x, y) => x.owner.localeCompare(y.owner));

beforeAll(async () => {
  server = await EtcdServer.start();
  admin = new Etcd3({ hosts: server.endpoint });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin.close();
  await server.stop();
});

describe('etcd holder metadata: in the value of the holder’s key', () => {
  it('declares every family with holders', () => {
    expect(client().backend.capabilities.holderMetadata).toEqual([
      'mutex',
      'reentrant',
      'fair',
      'spin',
      'read-write',
      'semaphore',
    ]);
  });

  it('a mutex key’s value is the record; a waiter’s record is from the attempt that queued it', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('mutex');
    const first = await a.mutex(name).acquire({ label: 'first' });
    const [value] = await values(name, 'mutex');
    expect(JSON.parse(value!)).toMatchObject({ owner: first.owner, host: hostname(), pid: process.pid });
    const waiting = b.mutex(name).acquire({ label: 'second', waitMs: 20_000 });
    await expect.poll(() => values(name, 'mutex')).toHaveLength(2);
    const queuedBy = Date.now();
    await first.release();
    const second = await waiting;
    const [holder] = (await a.mutex(name).inspect()).heldBy ?? [];
    expect(holder).toMatchObject({ owner: second.owner, label: 'second', pid: process.pid });
    // acquiredAt is when the attempt that put the key was made: before it held (it queued).
    expect(holder!.acquiredAt).toBeLessThanOrEqual(queuedBy);
    await second.release();
    expect((await a.mutex(name).inspect()).heldBy).toEqual([]);
  });

  it('read-write: each reader is named; a downgrade keeps the write acquire’s record', async () => {
    const [a, b] = [client(), client()];
    const name = lockName('rw');
    const write = await a.readWrite(name).write.acquire({ owner: 'owner', label: 'writing' });
    const [written] = await values(name, 'rw');
    expect(written!.startsWith('w{')).toBe(true);
    expect(JSON.parse(written!.slice(1))).toMatchObject({ owner: 'owner', label: 'writing' });
    expect((await b.readWrite(name).write.inspect()).heldBy).toMatchObject([
      { owner: 'owner', label: 'writing', host: hostname(), pid: process.pid },
    ]);
    expect((await b.readWrite(name).read.inspect()).heldBy).toEqual([]);

    const read = await a.readWrite(name).read.acquire({ owner: 'owner', label: 'reading' });
    expect(await write.release()).toBe('released');
    expect(await values(name, 'rw')).toEqual([`r${written!.slice(1)}`]); // the same record, now 'r'
    const other = await b.readWrite(name).read.acquire({ owner: 'second', label: 'also-reading' });
    const readers = byOwner((await b.readWrite(name).read.inspect()).heldBy);
    expect(readers).toMatchObject([
      { owner: 'owner', label: 'writing' },
      { owner: 'second', label: 'also-reading', pid: process.pid },
    ]);
    expect((await b.readWrite(name).write.inspect()).heldBy).toEqual([]);
    await Promise.all([read.release(), other.release()]);
    expect((await b.readWrite(name).read.inspect()).heldBy).toEqual([]);
  });

  it('keys of the old value form (the mode alone) are read as before: writers, readers, owners', async () => {
    const c = client();
    const lease = admin.lease(30, { autoKeepAlive: false });
    const hex = BigInt(await lease.grant()).toString(16);
    const rw = lockName('old-rw');
    const mutex = lockName('old-mutex');
    try {
      // A writer's key as it was written before records: 'w'. Readers must see a writer.
      await lease.put(`${dirOf(rw, 'rw')}${hex}/old-writer`).value('w');
      await lease.put(`${dirOf(mutex, 'mutex')}${hex}/old-holder`).value('');
      expect(await c.readWrite(rw).read.tryAcquire()).toBeUndefined();
      expect(await c.readWrite(rw).write.inspect()).toMatchObject({
        held: true,
        heldBy: [{ owner: 'old-writer' }],
      });
      expect((await c.readWrite(rw).read.inspect()).heldBy).toEqual([]);
      expect(await c.mutex(mutex).tryAcquire()).toBeUndefined();
      expect((await c.mutex(mutex).inspect()).heldBy).toEqual([{ owner: 'old-holder' }]);

      // Downgraded the old way ('r'): a reader now, who shares with new readers and keeps writers out.
      await lease.put(`${dirOf(rw, 'rw')}${hex}/old-writer`).value('r');
      const reader = await c.readWrite(rw).read.tryAcquire({ owner: 'new-reader', label: 'new' });
      expect(reader).toBeDefined();
      expect(await c.readWrite(rw).write.tryAcquire()).toBeUndefined();
      expect(byOwner((await c.readWrite(rw).read.inspect()).heldBy)).toMatchObject([
        { owner: 'new-reader', label: 'new', pid: process.pid },
        { owner: 'old-writer' },
      ]);
      await reader!.release();

      // A record that names another owner than its key is not shown for the key's owner.
      const stray = JSON.stringify({ owner: 'someone-else', host: 'h', pid: 1, acquiredAt: 1 });
      await lease.put(`${dirOf(rw, 'rw')}${hex}/old-writer`).value(`w${stray}`);
      expect(await c.readWrite(rw).read.tryAcquire()).toBeUndefined();
      expect((await c.readWrite(rw).write.inspect()).heldBy).toEqual([{ owner: 'old-writer' }]);
    } finally {
      await lease.revoke();
    }
  });
});
