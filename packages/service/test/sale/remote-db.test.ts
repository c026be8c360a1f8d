import { MessageChannel } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgliteDatabase, type Database } from '../../src/sale/store/db.js';
import { remoteDatabase, serveDatabase } from '../../src/sale/store/remote-db.js';

// The order thread serves PGlite to the HTTP thread over a MessagePort; here both ends share a thread.
let owner: Database;
let remote: Database;
let stop: () => void;
const channel = new MessageChannel();

beforeAll(async () => {
  owner = await pgliteDatabase();
  await owner.exec('CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)');
  stop = serveDatabase(channel.port2, owner);
  remote = remoteDatabase(channel.port1, 'pglite');
});
afterAll(async () => {
  stop();
  channel.port2.close();
  await owner.close();
});

describe('a database over a MessagePort', () => {
  it('queries, commits a transaction, and rolls one back when its function throws', async () => {
    await remote.query('INSERT INTO t VALUES ($1, $2)', [1, 'one']);
    const inside = await remote.transaction(async (tx) => {
      await tx.query('INSERT INTO t VALUES ($1, $2)', [2, 'two']);
      return (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM t')).rows[0]?.n;
    });
    expect(inside).toBe(2);
    await expect(
      remote.transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES ($1, $2)', [3, 'three']);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    const { rows, rowCount } = await remote.query<{ id: number }>('SELECT id FROM t ORDER BY id');
    expect([rows.map((r) => r.id), rowCount]).toEqual([[1, 2], 2]);
  });

  it('keeps the SQLSTATE of an error (the pipeline tells transient from permanent by it)', async () => {
    await expect(remote.query('INSERT INTO t VALUES (1, $1)', ['again'])).rejects.toMatchObject({
      code: '23505',
    });
    // A failed statement fails its transaction, which is rolled back; the store goes on.
    await expect(
      remote.transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES (10, $1)', ['ten']);
        await tx.query('INSERT INTO t VALUES (1, $1)', ['dup']);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect((await remote.query('SELECT 1 FROM t WHERE id = 10')).rowCount).toBe(0);
  });

  it('fails every call once the owning side is gone, as a dependency that is down', async () => {
    const { port1, port2 } = new MessageChannel();
    const lonely = remoteDatabase(port1, 'pglite');
    const stopLonely = serveDatabase(port2, owner);
    expect((await lonely.query('SELECT 1')).rowCount).toBe(1);
    stopLonely();
    port2.close();
    await expect(lonely.query('SELECT 1')).rejects.toMatchObject({ code: '57P01' });
  });
});
