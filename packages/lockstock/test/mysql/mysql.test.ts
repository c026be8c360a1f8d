import { createHash } from 'node:crypto';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MariaDbServer, RedisServer } from '@lockstock/servers';
import {
  InvalidLockOptionError,
  LockLostError,
  LockTimeoutError,
  UnsupportedLockKindError,
} from '../../src/index.js';
import {
  MySqlLockClient,
  mysqlLockName,
  mysqlServerName,
  type MySqlLockClientOptions,
} from '../../src/mysql/index.js';
import { forkFixtures, startTogether } from '../helpers/processes.js';

/**
 * The MySQL backend beyond the contract suite (contract/mysql.test.ts): what sessions, the server's
 * user-lock queue, KILL and the name mapping add. One private MariaDB for the file (and a Redis for
 * the contender processes' probes); every check reads the server (IS_USED_LOCK, the process list, the
 * fencing table) or what other processes recorded.
 */
let server: MariaDbServer;
let probe: RedisServer;
let admin: mysql.Pool;
const clients: MySqlLockClient[] = [];

beforeAll(async () => {
  [server, probe] = await Promise.all([MariaDbServer.start(), RedisServer.start()]);
  admin = mysql.createPool({ ...server.connectionOptions, connectionLimit: 4 });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await admin?.end();
  await Promise.all([server?.stop(), probe?.stop()]);
});

function client(options: Partial<MySqlLockClientOptions> = {}): MySqlLockClient {
  const made = new MySqlLockClient({ mysql: server.url, maxConnections: 8, ...options });
  made.on('connectionError', () => undefined); // killed connections are reported here, by design
  clients.push(made);
  return made;
}

let unique = 0;
const lockName = (label: string) => `my-${label}-${process.pid}-${++unique}`;

async function query<R>(sql: string, values: unknown[] = []): Promise<R[]> {
  const [rows] = await admin.query(sql, values);
  return rows as R[];
}

/** The connection holding the user lock of `name` (server-side name), or null. */
const holderOf = async (serverName: string): Promise<number | null> =>
  (await query<{ holder: number | null }>('SELECT IS_USED_LOCK(?) AS holder', [serverName]))[0]!.holder;

/** Connections waiting in GET_LOCK for `serverName`, from the process list (query ids included). */
const waitersOn = (serverName: string) =>
  query<{ id: number; query_id: number }>(
    `SELECT ID AS id, QUERY_ID AS query_id FROM information_schema.PROCESSLIST
      WHERE STATE = 'User lock' AND INFO LIKE CONCAT('%', ?, '%') ORDER BY ID`,
    [serverName],
  );

const aborted = (handle: { signal: AbortSignal }) =>
  new Promise<LockLostError>((resolve) =>
    handle.signal.addEventListener('abort', () => resolve(handle.signal.reason as LockLostError), {
      once: true,
    }),
  );

describe('MySQL lock names', () => {
  it('plain lowercase names are sent as they are; others by the stated hash, the same in SQL', async () => {
    expect(mysqlLockName('orders:42')).toBe('ls:orders:42');
    const hashed = ['Orders', 'ünïcödé ✓', 'x'.repeat(300), 'trailing ', 'x'.repeat(62)];
    for (const name of hashed) {
      const [row] = await query<{ sent: string }>(
        "SELECT CONCAT('ls#', LEFT(SHA2(CONVERT(? USING utf8mb4), 256), 61)) AS sent",
        [name],
      );
      expect(mysqlLockName(name)).toBe(row!.sent);
      expect(mysqlLockName(name).length).toBeLessThanOrEqual(64);
    }
    expect(mysqlLockName('x'.repeat(61))).toBe(`ls:${'x'.repeat(61)}`); // 64 characters, as is
    expect(mysqlServerName('ls0', 'Orders')).toBe(
      `ls0#${createHash('sha256').update('Orders').digest('hex')}`.slice(0, 64),
    );
  });

  it('names that differ only in case, accents or trailing spaces are distinct locks', async () => {
    const [a, b] = [client(), client()];
    const base = lockName('case');
    const variants = [base, base.toUpperCase(), `${base} `, `${base}é`, `${base}e`];
    const holds = await Promise.all(variants.map((n, i) => (i % 2 ? a : b).mutex(n).tryAcquire()));
    expect(holds.every((h) => h !== undefined)).toBe(true);
    // Five different holders on the server, as five different names.
    const holders = await Promise.all(variants.map((n) => holderOf(mysqlLockName(n))));
    expect(new Set(holders).size).toBe(variants.length);
    expect(holders.every((h) => h !== null)).toBe(true);
    await Promise.all(holds.map((h) => h!.release()));
  });

  it('a long name is one lock for every client (its hash), and held as one', async () => {
    const name = `${lockName('long')}/${'Segment'.repeat(40)}`;
    const [a, b] = [client(), client()];
    const held = await a.mutex(name).acquire();
    expect(await holderOf(mysqlLockName(name))).not.toBeNull();
    expect(await b.mutex(name).tryAcquire()).toBeUndefined();
    expect(
      await b
        .mutex(name.toLowerCase())
        .tryAcquire()
        .then((h) => h?.release()),
    ).toBe('released');
    await held.release();
    const next = await b.mutex(name).acquire({ waitMs: 5_000 });
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    await next.release();
  });
});

describe('MySQL locks', () => {
  it('a killed connection loses exactly the hold it carried, at once', async () => {
    const locks = client();
    const [a, b] = [lockName('a'), lockName('b')];
    const [held, kept] = await Promise.all([locks.mutex(a).acquire(), locks.mutex(b).acquire()]);
    const lost = aborted(held);
    await admin.query(`KILL CONNECTION ${Number(await holderOf(mysqlLockName(a)))}`);
    expect((await lost).reason).toBe('session_lost');
    expect(kept.signal.aborted).toBe(false);
    expect(await locks.mutex(b).isLocked()).toBe(true);
    expect(await held.release()).toBe('expired');
    expect(await kept.release()).toBe('released');
  });

  it('a release racing the KILL of its connection settles as expired, never hangs', async () => {
    // mysql2 can leave a statement written just as the server kills the connection unanswered: the
    // session's end settles it (the contract's lost-lease check on a multi-lock hung on this).
    const locks = client();
    const outcomes = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const name = lockName(`race-${i}`);
      const handle = await locks.mutex(name).acquire();
      const connection = Number(await holderOf(mysqlLockName(name)));
      // The KILL is done on the server; its answer may come before the client reads its socket's end.
      await admin.query(`KILL CONNECTION ${connection}`);
      outcomes.add(await handle.release());
      // The killed thread frees its locks as it exits, a moment after KILL answered.
      await expect.poll(() => holderOf(mysqlLockName(name))).toBeNull();
    }
    expect([...outcomes]).toEqual(['expired']); // the KILL freed it: never 'released' by the holder
  });

  it("KILL of a holder's connection in another process: its signal aborts within a second, another process takes the lock", async () => {
    const name = lockName('killed');
    const serverName = mysqlLockName(name);
    const [holder] = forkFixtures('signal-holder.mjs', [
      [JSON.stringify({ backend: { kind: 'mysql', url: server.url }, subject: 'mutex', name })],
    ]);
    try {
      const acquired = await holder!.next('acquired');
      const [taker] = forkFixtures('mysql-taker.mjs', [[JSON.stringify({ url: server.url, name })]]);
      await expect.poll(async () => (await waitersOn(serverName)).length, { timeout: 10_000 }).toBe(1);
      const held = await holderOf(serverName);
      const killedAt = performance.timeOrigin + performance.now();
      await admin.query(`KILL CONNECTION ${Number(held)}`);
      const [lost, took] = await Promise.all([holder!.next('lost'), taker!.next('took')]);
      const abortMs = (lost.at as number) - killedAt;
      const takenMs = (took.at as number) - killedAt;
      console.log(
        `KILL CONNECTION → holder's signal aborted in ${abortMs.toFixed(1)} ms, ` +
          `the other process held it after ${takenMs.toFixed(1)} ms`,
      );
      expect(lost.reason).toBe('session_lost');
      expect(abortMs).toBeLessThan(5_000); // across two processes; generous on a loaded machine
      expect(took.token).toBeGreaterThan(acquired.token as number);
      // The server agrees: the taker's connection holds it now, not the killed one.
      const now = await holderOf(serverName);
      expect(now).not.toBeNull();
      expect(now).not.toBe(held);
      taker!.send({ type: 'release' });
      expect((await taker!.next('released')).outcome).toBe('released');
      await taker!.exited;
    } finally {
      holder!.kill();
    }
  });

  it('a paused holder keeps the lock (a session lock: no lease runs out); others wait it out', async () => {
    const name = lockName('paused-holder');
    const [holder] = forkFixtures('signal-holder.mjs', [
      [JSON.stringify({ backend: { kind: 'mysql', url: server.url }, subject: 'mutex', name })],
    ]);
    try {
      const acquired = await holder!.next('acquired');
      const held = await holderOf(mysqlLockName(name));
      holder!.kill('SIGSTOP');
      // Longer than any lease the other backends' tests use: nothing expires a user lock.
      expect(await client().mutex(name).tryAcquire({ waitMs: 2_500 })).toBeUndefined();
      expect(await holderOf(mysqlLockName(name))).toBe(held);
      holder!.kill('SIGCONT');
      const waiting = client().mutex(name).acquire({ waitMs: 20_000 });
      holder!.kill('SIGKILL'); // its socket closes: the server frees the lock at once
      const next = await waiting;
      expect(next.fencingToken).toBeGreaterThan(acquired.token as number);
      await next.release();
    } finally {
      holder!.kill('SIGKILL');
    }
  });

  it('the server stopping to answer (paused) loses the hold after sessionCheckMs', async () => {
    const name = lockName('frozen');
    const handle = await client({ sessionCheckMs: 200 }).mutex(name).acquire();
    const lost = aborted(handle);
    server.pause(); // nothing closes the connection: only the session check can tell
    try {
      expect((await lost).reason).toBe('session_lost');
    } finally {
      server.resume();
    }
    // The client dropped the connection: the server sees it closed and frees the lock.
    const next = await client().mutex(name).acquire({ waitMs: 10_000 });
    expect(next.fencingToken).toBeGreaterThan(handle.fencingToken);
    await next.release();
  });

  it("waiters block in the server's queue: no polling, granted in arrival order", async () => {
    const name = lockName('queue');
    const serverName = mysqlLockName(name);
    const holder = await client().fair(name).acquire();
    const order: number[] = [];
    const waiters: Array<Promise<void>> = [];
    for (let i = 0; i < 3; i++) {
      const lock = client().fair(name);
      waiters.push(
        lock.acquire({ waitMs: 20_000 }).then(async (handle) => {
          order.push(i);
          await handle.release();
        }),
      );
      // The next waiter queues only once this one waits on the server.
      await expect.poll(async () => (await waitersOn(serverName)).length, { timeout: 10_000 }).toBe(i + 1);
    }
    const before = await waitersOn(serverName);
    // An observation window in which a polling waiter would send new statements (it sends none).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await waitersOn(serverName)).toEqual(before);
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2]);
  });

  it('a waiter that gives up (abort or timeout) cancels its GET_LOCK on the server at once', async () => {
    const name = lockName('gave-up');
    const serverName = mysqlLockName(name);
    const locks = client();
    const holder = await locks.mutex(name).acquire();
    const holderConnection = await holderOf(serverName);
    const other = client().mutex(name);
    for (const giveUp of ['abort', 'timeout'] as const) {
      const controller = new AbortController();
      const waiting = other.acquire(giveUp === 'abort' ? { signal: controller.signal } : { waitMs: 1_500 });
      await expect.poll(async () => (await waitersOn(serverName)).length, { timeout: 10_000 }).toBe(1);
      const [waiter] = await waitersOn(serverName);
      controller.abort();
      await expect(waiting).rejects.toThrow();
      // Gone well before the wait's own 10 s slice could end it: KILL QUERY ended it.
      await expect.poll(async () => (await waitersOn(serverName)).length, { timeout: 5_000 }).toBe(0);
      // Only the statement was killed: the waiter's connection lives on (back in its pool).
      const [alive] = await query<{ n: number }>(
        'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = ?',
        [waiter!.id],
      );
      expect(alive!.n).toBe(1);
    }
    // The holder kept its lock throughout, and nobody else got it.
    expect(await holderOf(serverName)).toBe(holderConnection);
    expect(holder.signal.aborted).toBe(false);
    await holder.release();
    expect(await holderOf(serverName)).toBeNull();
    expect(await locks.mutex(name).isLocked()).toBe(false);
  });

  it('semaphore: a release hands a blocked waiter its permit; killed holders’ permits come back', async () => {
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
    const next = sem.acquire({ waitMs: 10_000 });
    const lost = [aborted(permits[1]!), aborted(third)];
    for (const permit of [mysqlServerName('ls0', name), mysqlServerName('ls1', name)]) {
      await admin.query(`KILL CONNECTION ${Number(await holderOf(permit))}`);
    }
    expect((await Promise.all(lost)).map((e) => e.reason)).toEqual(['session_lost', 'session_lost']);
    const last = await next;
    expect(last.fencingToken).toBeGreaterThan(third.fencingToken);
    await last.release();
  });

  it('an election: one leader, read from the server; the next candidate leads after a resign', async () => {
    const e = lockName('election');
    const [a, b] = [client(), client()];
    const term = await a.election(e).campaign('node-a');
    const other = b.election(e).campaign('node-b', { waitMs: 10_000 });
    expect(await b.election(e).leader()).toEqual({ value: 'node-a', fencingToken: term.fencingToken });
    await term.resign();
    const next = await other;
    expect(next.fencingToken).toBeGreaterThan(term.fencingToken);
    expect(await a.election(e).leader()).toEqual({ value: 'node-b', fencingToken: next.fencingToken });
    await next.resign();
    expect(await a.election(e).leader()).toBeUndefined();
  });

  it('families GET_LOCK cannot carry are refused at the factory, with the reason', () => {
    const locks = client();
    expect(() => locks.readWrite('rw')).toThrow(UnsupportedLockKindError);
    expect(() => locks.readWrite('rw')).toThrow(/no shared user lock/);
    expect(() => locks.counterSemaphore('c', { permits: 2 })).toThrow(UnsupportedLockKindError);
    expect(() => locks.countDownLatch('l')).toThrow(UnsupportedLockKindError);
    expect(() => new MySqlLockClient({ mysql: '' })).toThrow(InvalidLockOptionError);
    expect(() => new MySqlLockClient({ mysql: server.url, fencingTable: 'x; DROP' })).toThrow(
      InvalidLockOptionError,
    );
    expect(() => new MySqlLockClient({ mysql: server.url, fencingSequence: 'a.b.c' })).toThrow(
      InvalidLockOptionError,
    );
  });

  it('close() ends every session: its holds are lost, their locks free', async () => {
    const name = lockName('closed');
    const locks = new MySqlLockClient({ mysql: server.url });
    const handle = await locks.mutex(name).acquire();
    const lost = aborted(handle);
    await locks.close();
    expect((await lost).reason).toBe('client_closed');
    await expect.poll(() => holderOf(mysqlLockName(name))).toBeNull();
  });

  it('a wait for a lock timed out leaves nothing queued', async () => {
    const name = lockName('timeout');
    const holder = await client().mutex(name).acquire();
    await expect(client().mutex(name).acquire({ waitMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    await expect.poll(async () => (await waitersOn(mysqlLockName(name))).length).toBe(0);
    await holder.release();
  });
});

/** Draws the fencing sequence's next value from the admin connection (it moves the sequence by one). */
const nextOfSequence = async (sequence = 'lockstock.lockstock_fencing_seq') =>
  Number((await query<{ next: number }>(`SELECT NEXTVAL(${sequence}) AS next`))[0]!.next);

describe('fencing from the sequence (MariaDB)', () => {
  it('a refused try draws no token: the sequence moves once per grant only', async () => {
    const name = lockName('refused');
    const holder = await client().mutex(name).acquire();
    const other = client();
    const before = await nextOfSequence();
    expect(holder.fencingToken).toBeLessThan(before);
    // Refused tries and a refused wait, from another client (another pool): none draws a token.
    for (let i = 0; i < 10; i++) expect(await other.mutex(name).tryAcquire()).toBeUndefined();
    await expect(other.mutex(name).acquire({ waitMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(await nextOfSequence()).toBe(before + 1);
    await holder.release();
    const next = await other.mutex(name).acquire();
    expect(next.fencingToken).toBe(before + 2);
    // Drawn from the sequence, not the table: the name has no row.
    expect(
      await query('SELECT token FROM lockstock.lockstock_fencing WHERE name = ?', [mysqlLockName(name)]),
    ).toEqual([]);
    await next.release();
  });

  it('a new sequence starts above every token its fencing table handed out', async () => {
    const table = `fence_${process.pid}_${++unique}`;
    await query(`CREATE TABLE lockstock.${table} LIKE lockstock.lockstock_fencing`);
    await query(`INSERT INTO lockstock.${table} (name, token) VALUES (?, 41000)`, [mysqlLockName('before')]);
    const locks = client({ fencingTable: table, fencingSequence: `lockstock.${table}_seq` });
    const handle = await locks.mutex('before').acquire();
    expect(handle.fencingToken).toBe(41001);
    await handle.release();
  });
});

describe('fencing across processes', () => {
  it('tokens strictly increase in the order the lock passed, one per grant, from the sequence', async () => {
    // A mixed-case name past 64 characters: hashed, one lock for every process.
    const name = `${lockName('Fenced')}/${'Mixed-Case-Segment'.repeat(5)}`;
    const sections = 10;
    const loops = 2;
    const contenders = forkFixtures(
      'contender.mjs',
      [0, 1, 2].map(() => [
        JSON.stringify({
          backend: { kind: 'mysql', url: server.url },
          subject: 'reentrant',
          name,
          loops,
          sections,
          probeUrl: probe.url,
        }),
      ]),
    );
    await startTogether(contenders);
    const done = await Promise.all(contenders.map((c) => c.next('done')));
    const records = done.flatMap(
      (m) => m.records as Array<{ pid: number; token: number; acquiredAt: string }>,
    );
    expect(records).toHaveLength(3 * loops * sections);
    expect(new Set(records.map((r) => r.pid)).size).toBe(3);
    // Ordered by when each process got the lock (one monotonic clock on one machine), tokens grow.
    const byTime = [...records].sort((x, y) => (BigInt(x.acquiredAt) < BigInt(y.acquiredAt) ? -1 : 1));
    for (let i = 1; i < byTime.length; i++) expect(byTime[i]!.token).toBeGreaterThan(byTime[i - 1]!.token);
    // One token per grant, none skipped: nothing else draws from this file's sequence meanwhile, so
    // consecutive values mean no refused try (the contenders' many) drew one, and the sequence's next
    // value follows the last token.
    const tokens = records.map((r) => r.token).sort((x, y) => x - y);
    expect(tokens.at(-1)! - tokens[0]! + 1).toBe(records.length);
    expect(await nextOfSequence()).toBe(tokens.at(-1)! + 1);
  });
});
