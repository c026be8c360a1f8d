import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgBouncerServer, PostgresServer } from '@lockstock/servers';
import {
  InvalidLockOptionError,
  LockLostError,
  LockTimeoutError,
  LockUpgradeError,
  UnsupportedLockKindError,
  type LockHandle,
} from '../../src/index.js';
import {
  lockKey,
  permitKeys,
  PostgresLockClient,
  TransactionPoolerError,
  withTransactionLock,
  type PostgresLockClientOptions,
} from '../../src/postgres/index.js';
import { forkFixtures } from '../helpers/processes.js';

/**
 * The PostgreSQL backend beyond the contract suite (contract/postgres.test.ts): what sessions,
 * PostgreSQL's lock queue, poolers and transactions add. One private PostgreSQL for the file; the
 * pooler tests put real pgbouncers (transaction and session mode) in front of it.
 */
let server: PostgresServer;
let admin: pg.Pool;
const clients: PostgresLockClient[] = [];

beforeAll(async () => {
  server = await PostgresServer.start();
  admin = new pg.Pool({ connectionString: server.url, max: 4 });
  admin.on('error', () => undefined); // idle connections see the server stop at the end
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await admin?.end();
  await server?.stop();
});

function client(options: Partial<PostgresLockClientOptions> = {}): PostgresLockClient {
  const made = new PostgresLockClient({ postgres: server.url, maxConnections: 8, ...options });
  made.on('connectionError', () => undefined); // terminated sessions are reported here, by design
  clients.push(made);
  return made;
}

let unique = 0;
const lockName = (label: string) => `pg-${label}-${process.pid}-${++unique}`;

/** Server backends holding (or waiting for) the advisory lock of `name`, from pg_locks. */
async function sessionsOn(name: string): Promise<Array<{ pid: number; granted: boolean; mode: string }>> {
  const key = lockKey(name);
  const { rows } = await admin.query<{ pid: number; granted: boolean; mode: string }>(
    `SELECT pid, granted, mode FROM pg_locks
      WHERE locktype = 'advisory' AND objsubid = 1
        AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid`,
    [key.toString()],
  );
  return rows;
}

const aborted = (handle: LockHandle) =>
  new Promise<LockLostError>((resolve) =>
    handle.signal.addEventListener('abort', () => resolve(handle.signal.reason as LockLostError), {
      once: true,
    }),
  );

describe('PostgreSQL locks', () => {
  it('lock names map to keys by the stated hash, the same in SQL', async () => {
    const names = ['orders', 'sale:42', 'ünïcödé ✓', 'x'.repeat(300)];
    const { rows } = await admin.query<{ key: string }>(
      `SELECT ('x' || substr(encode(sha256(convert_to('lockstock:lock:' || name, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint AS key
         FROM unnest($1::text[]) WITH ORDINALITY AS n(name, i) ORDER BY i`,
      [names],
    );
    expect(rows.map((r) => BigInt(r.key))).toEqual(names.map(lockKey));
  });

  it('a dropped connection loses exactly the holds it carried, at once', async () => {
    const locks = client();
    const [a, b] = [lockName('a'), lockName('b')];
    const [held, kept] = await Promise.all([locks.mutex(a).acquire(), locks.mutex(b).acquire()]);
    const [holder] = await sessionsOn(a);
    const lost = aborted(held);
    await admin.query('SELECT pg_terminate_backend($1)', [holder!.pid]);
    expect((await lost).reason).toBe('session_lost');
    expect(kept.signal.aborted).toBe(false);
    expect(await locks.mutex(b).isLocked()).toBe(true);
    expect(await held.release()).toBe('expired');
    expect(await kept.release()).toBe('released');
  });

  it(
    "pg_terminate_backend of a holder's connection: its signal aborts within a second, another " +
      'process takes the lock',
    async () => {
      const name = lockName('terminated');
      const [holder] = forkFixtures('signal-holder.mjs', [
        [JSON.stringify({ backend: { kind: 'postgres', url: server.url }, subject: 'mutex', name })],
      ]);
      try {
        const acquired = await holder!.next('acquired');
        const waiting = client().mutex(name).acquire({ waitMs: 10_000 });
        await expect.poll(async () => (await sessionsOn(name)).length).toBe(2); // queued on the server
        const [held] = (await sessionsOn(name)).filter((s) => s.granted);
        const terminatedAt = performance.timeOrigin + performance.now();
        await admin.query('SELECT pg_terminate_backend($1)', [held!.pid]);
        const [lost, next] = await Promise.all([holder!.next('lost'), waiting]);
        const abortMs = (lost.at as number) - terminatedAt;
        const takenMs = performance.timeOrigin + performance.now() - terminatedAt;
        console.log(
          `pg_terminate_backend → holder's signal aborted in ${abortMs.toFixed(1)} ms, next holder in ≤ ${takenMs.toFixed(1)} ms`,
        );
        expect(lost.reason).toBe('session_lost');
        expect(abortMs).toBeLessThan(5_000); // generous on a loaded machine; a few ms is the norm
        expect(next.fencingToken).toBeGreaterThan(acquired.token as number);
        await next.release();
      } finally {
        holder!.kill();
      }
    },
  );

  it('a session that stops answering (its backend frozen, the socket open) is lost after sessionCheckMs', async () => {
    const name = lockName('frozen');
    const handle = await client({ sessionCheckMs: 200 }).mutex(name).acquire();
    const [holder] = await sessionsOn(name);
    const lost = aborted(handle);
    process.kill(holder!.pid, 'SIGSTOP'); // the server backend itself: nothing closes the connection
    try {
      expect((await lost).reason).toBe('session_lost');
    } finally {
      process.kill(holder!.pid, 'SIGCONT');
    }
    // The client dropped the connection: the thawed backend sees it closed and frees the lock.
    const next = await client().mutex(name).acquire({ waitMs: 10_000 });
    expect(next.fencingToken).toBeGreaterThan(handle.fencingToken);
    await next.release();
  });

  it("waiters queue in PostgreSQL's lock queue: no polling, granted in arrival order", async () => {
    const name = lockName('queue');
    const holder = await client().mutex(name).acquire();
    const order: number[] = [];
    const waiters: Array<Promise<void>> = [];
    for (let i = 0; i < 3; i++) {
      const lock = client().mutex(name);
      waiters.push(
        lock.acquire({ waitMs: 20_000 }).then(async (handle) => {
          order.push(i);
          await handle.release();
        }),
      );
      // The next waiter queues only once this one waits on the server.
      await expect.poll(async () => (await sessionsOn(name)).filter((s) => !s.granted).length).toBe(i + 1);
    }
    const before = await admin.query<{ pid: number; query_start: Date }>(
      `SELECT pid, query_start FROM pg_stat_activity WHERE wait_event = 'advisory' ORDER BY pid`,
    );
    // An observation window in which a polling waiter would send new statements (it sends none).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await admin.query<{ pid: number; query_start: Date }>(
      `SELECT pid, query_start FROM pg_stat_activity WHERE wait_event = 'advisory' ORDER BY pid`,
    );
    expect(after.rows).toEqual(before.rows);
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2]);
  });

  it('a waiter that gives up leaves no wait behind on the server', async () => {
    const name = lockName('gave-up');
    const locks = client();
    const holder = await locks.mutex(name).acquire();
    const other = client().mutex(name);
    await expect(other.acquire({ waitMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    const controller = new AbortController();
    const abandoned = other.acquire({ signal: controller.signal });
    await expect.poll(async () => (await sessionsOn(name)).filter((s) => !s.granted).length).toBe(1);
    controller.abort();
    await expect(abandoned).rejects.toThrow();
    await expect.poll(async () => (await sessionsOn(name)).filter((s) => !s.granted).length).toBe(0);
    await holder.release();
    expect(await locks.mutex(name).isLocked()).toBe(false);
  });

  it('read-write: readers share, a waiting writer holds new readers off, no upgrade', async () => {
    const name = lockName('rw');
    const [a, b] = [client(), client()];
    const r1 = await a.readWrite(name).read.acquire({ owner: 'reader-1' });
    const r2 = await b.readWrite(name).read.acquire({ owner: 'reader-2' });
    expect((await a.readWrite(name).read.inspect()).holders).toBe(2);
    await expect(a.readWrite(name).write.acquire({ owner: 'reader-1' })).rejects.toBeInstanceOf(
      LockUpgradeError,
    );
    const writer = b.readWrite(name).write.acquire({ owner: 'writer', waitMs: 10_000 });
    await expect.poll(async () => (await sessionsOn(name)).filter((s) => !s.granted).length).toBe(1);
    // PostgreSQL queues a new shared request behind a waiting exclusive one.
    expect(await a.readWrite(name).read.tryAcquire({ owner: 'reader-3' })).toBeUndefined();
    await Promise.all([r1.release(), r2.release()]);
    const w = await writer;
    // The writer may take the read side too (a downgrade), in its own session.
    const downgraded = await b.readWrite(name).read.acquire({ owner: 'writer' });
    expect(await w.release()).toBe('released');
    expect(await a.readWrite(name).write.tryAcquire({ owner: 'other' })).toBeUndefined();
    await downgraded.release();
  });

  it("semaphore: a release wakes a waiter (NOTIFY); terminated holders' permits come back", async () => {
    const name = lockName('permits');
    const [a, b] = [client(), client()];
    const permits = [
      await a.semaphore(name, { permits: 2 }).acquire(),
      await a.semaphore(name, { permits: 2 }).acquire(),
    ];
    const sem = b.semaphore(name, { permits: 2 });
    expect(await sem.available()).toBe(0);
    const waiting = sem.acquire({ waitMs: 10_000 });
    await permits[0]!.release();
    const third = await waiting;
    expect(third.fencingToken).toBeGreaterThan(permits[1]!.fencingToken);
    // Holders whose sessions end send no NOTIFY: the waiter's recheck finds the permits.
    const next = sem.acquire({ waitMs: 10_000 });
    const lost = [aborted(permits[1]!), aborted(third)];
    await admin.query(
      `SELECT pg_terminate_backend(l.pid) FROM pg_locks AS l
         JOIN unnest($1::bigint[]) AS k(key)
           ON l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid
        WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted`,
      [permitKeys(name, 2).map(String)],
    );
    expect((await Promise.all(lost)).map((e) => e.reason)).toEqual(['session_lost', 'session_lost']);
    await (await next).release();
  });

  it('families the advisory locks cannot carry are refused at the factory, with the reason', () => {
    const locks = client();
    expect(() => locks.counterSemaphore('c', { permits: 2 })).toThrow(UnsupportedLockKindError);
    expect(() => locks.countDownLatch('l')).toThrow(UnsupportedLockKindError);
  });

  it('close() ends every session: its holds are lost, their locks free', async () => {
    const name = lockName('closed');
    const locks = client();
    const handle = await locks.mutex(name).acquire();
    const lost = aborted(handle);
    await locks.close();
    expect((await lost).reason).toBe('client_closed');
    await expect.poll(async () => (await sessionsOn(name)).length).toBe(0);
  });
});

describe('withTransactionLock', () => {
  /** A connection in an open transaction, rolled back and released whatever the test does. */
  async function inTransaction<T>(fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
    const tx = await admin.connect();
    try {
      await tx.query('BEGIN');
      return await fn(tx);
    } finally {
      await tx.query('ROLLBACK').catch(() => undefined);
      tx.release();
    }
  }

  it('holds the lock until COMMIT, the same lock as the mutex of the name', async () => {
    const name = lockName('tx-commit');
    const locks = client();
    const tx = await admin.connect();
    try {
      await tx.query('BEGIN');
      const token = await locks.withTransactionLock(tx, name, async (lock) => {
        expect(await locks.mutex(name).tryAcquire()).toBeUndefined();
        return lock.fencingToken;
      });
      expect(await locks.mutex(name).tryAcquire()).toBeUndefined(); // fn returned; the transaction goes on
      await tx.query('COMMIT');
      const after = await locks.mutex(name).acquire({ waitMs: 5_000 });
      expect(after.fencingToken).toBeGreaterThan(token); // one sequence for both
      await after.release();
    } finally {
      tx.release();
    }
  });

  it('ends with ROLLBACK too, and at once when a statement fails (the transaction is aborted)', async () => {
    const [rolledBack, failed] = [lockName('tx-rollback'), lockName('tx-failed')];
    const locks = client();
    await inTransaction(async (tx) => {
      await withTransactionLock(tx, rolledBack, async () => undefined);
      expect(await locks.mutex(rolledBack).tryAcquire()).toBeUndefined();
      await tx.query('ROLLBACK');
      expect(await locks.mutex(rolledBack).isLocked()).toBe(false);
    });
    await inTransaction(async (tx) => {
      const failing = withTransactionLock(tx, failed, async () => {
        expect(await locks.mutex(failed).tryAcquire()).toBeUndefined();
        await tx.query('SELECT 1/0');
      });
      await expect(failing).rejects.toThrow(/division by zero/);
      // PostgreSQL releases an aborted transaction's locks at the error, before its ROLLBACK: the
      // writes the lock protected are gone with it.
      expect(await locks.mutex(failed).isLocked()).toBe(false);
    });
  });

  it("a bounded wait times out in a savepoint: the caller's transaction and lock_timeout stay as they were", async () => {
    const name = lockName('tx-timeout');
    const holder = await client().mutex(name).acquire();
    await inTransaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '7s'`);
      await expect(withTransactionLock(tx, name, async () => 'ran', { waitMs: 100 })).rejects.toBeInstanceOf(
        LockTimeoutError,
      );
      await expect(withTransactionLock(tx, name, async () => 'ran', { waitMs: 0 })).rejects.toBeInstanceOf(
        LockTimeoutError,
      );
      expect((await tx.query('SHOW lock_timeout')).rows[0]).toEqual({ lock_timeout: '7s' });
      await holder.release();
      expect(await withTransactionLock(tx, name, async () => 'ran', { waitMs: 5_000 })).toBe('ran');
    });
  });

  it('refuses a client outside a transaction (its lock would end with its own statement)', async () => {
    await expect(withTransactionLock(admin, lockName('tx-none'), async () => 'ran')).rejects.toBeInstanceOf(
      InvalidLockOptionError,
    );
  });
});

describe('behind pgbouncer', () => {
  let transactionPooler: PgBouncerServer;
  let sessionPooler: PgBouncerServer;
  beforeAll(async () => {
    [transactionPooler, sessionPooler] = await Promise.all([
      PgBouncerServer.start({ target: server, poolMode: 'transaction', defaultPoolSize: 4 }),
      PgBouncerServer.start({ target: server, poolMode: 'session', defaultPoolSize: 8 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all([transactionPooler?.stop(), sessionPooler?.stop()]);
  });

  it('in transaction mode, session locks are refused with a clear error, and nothing is left locked', async () => {
    const name = lockName('pooled');
    const locks = client({ postgres: transactionPooler.url });
    const refused = await locks
      .mutex(name)
      .acquire()
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TransactionPoolerError);
    expect((refused as Error).message).toMatch(/transaction or statement pooling/);
    expect((refused as Error).message).toMatch(/scope: 'transaction'/);
    expect(await sessionsOn(name)).toEqual([]);
  });

  it('in session mode, session locks work (the pooler keeps one server session per client)', async () => {
    const name = lockName('session-pooled');
    const locks = client({ postgres: sessionPooler.url });
    const handle = await locks.mutex(name).acquire();
    expect(locks.backend.pooler).toBe('session-pooler');
    expect(await client().mutex(name).tryAcquire()).toBeUndefined();
    expect(await handle.release()).toBe('released');
  });

  it("scope 'transaction' works through the transaction pooler: each hold in its own open transaction", async () => {
    const name = lockName('tx-scope');
    const [a, b] = [
      client({ postgres: transactionPooler.url, scope: 'transaction' }),
      client({ postgres: transactionPooler.url, scope: 'transaction' }),
    ];
    const first = await a.mutex(name).acquire();
    expect(await b.mutex(name).tryAcquire()).toBeUndefined();
    const waiting = b.mutex(name).acquire({ waitMs: 10_000 });
    await expect.poll(async () => (await sessionsOn(name)).filter((s) => !s.granted).length).toBe(1);
    expect(await first.release()).toBe('released');
    const second = await waiting;
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await second.release()).toBe('released');
    await expect.poll(async () => (await sessionsOn(name)).length).toBe(0);
  });
});
