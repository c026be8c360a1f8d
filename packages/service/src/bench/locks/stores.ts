/**
 * The benchmark's rows on the stores that are not Redis: each store's floor (its raw requests for one
 * acquire + release, without any library, waiting as plainly as the store allows when the lock is
 * taken) and the peer packages that run there (the etcd3 package's lock, advisory-lock).
 */
import type { Etcd3 } from 'etcd3';
import mysql from 'mysql2/promise';
import zookeeper from 'node-zookeeper-client';
import pg from 'pg';

export interface StoreHeld {
  release(): Promise<unknown>;
}

export interface StoreLock {
  acquire(key: string): Promise<StoreHeld>;
  close?(): Promise<void>;
}

/** A lock's lease where the store's lock needs one (the peers' defaults are 10 s too). */
const LEASE_MS = 10_000;

/**
 * The etcd3 package's lock (`client.lock(key)`): it tries once and throws when the key is taken, so
 * the benchmark retries it at once, as an application would have to.
 */
export async function etcd3Lock(client: Etcd3): Promise<StoreLock> {
  const { EtcdLockFailedError } = await import('etcd3');
  return {
    acquire: async (key) => {
      for (;;) {
        const lock = client.lock(key).ttl(LEASE_MS / 1000);
        try {
          await lock.acquire();
          return lock;
        } catch (error) {
          if (!(error instanceof EtcdLockFailedError)) throw error;
        }
      }
    },
  };
}

/**
 * etcd's floor: one acquire + release as raw requests on one client — a put of the key bound to a
 * lease granted once (a transaction: only if the key does not exist), then a delete. A refused put
 * watches the key from the revision it saw until a delete, then tries again (every waiter wakes).
 */
export function etcdFloor(client: Etcd3): StoreLock {
  const lease = client.lease(LEASE_MS / 1000, { autoKeepAlive: true });
  let counter = 0;
  return {
    acquire: async (key) => {
      const leaseId = await lease.grant();
      const value = `floor-${++counter}`;
      for (;;) {
        const { succeeded, header } = await client
          .if(key, 'Create', '==', 0)
          .then(client.put(key).value(value).lease(leaseId))
          .commit();
        if (succeeded) break;
        const watcher = await client
          .watch()
          .key(key)
          .startRevision(String(Number(header.revision) + 1))
          .create();
        await new Promise<void>((resolve) => {
          watcher.once('delete', () => resolve());
          watcher.once('error', () => resolve()); // try again: the put tells
        });
        await watcher.cancel();
      }
      return { release: () => client.delete().key(key).exec() };
    },
  };
}

const call = <T>(run: (done: (error: unknown, value?: T) => void) => void) =>
  new Promise<T>((resolve, reject) =>
    run((error, value) => (error ? reject(error as Error) : resolve(value as T))),
  );

/**
 * ZooKeeper's floor: one acquire + release as raw requests on one client — create an ephemeral node
 * (under a parent made once), then delete it. A create refused because the node exists watches it
 * (`exists`) and tries again when it goes: every waiter wakes (a herd; the raw way, not a recipe).
 */
export function zookeeperFloor(client: zookeeper.Client): StoreLock {
  const parent = call<string>((done) => client.mkdirp('/bench-floor', done));
  let counter = 0;
  return {
    acquire: async (key) => {
      await parent;
      const path = `/bench-floor/${key}`;
      const data = Buffer.from(`floor-${++counter}`);
      for (;;) {
        try {
          await call((done) => client.create(path, data, zookeeper.CreateMode.EPHEMERAL, done));
          break;
        } catch (error) {
          const exists = (error as zookeeper.Exception).getCode?.() === zookeeper.Exception.NODE_EXISTS;
          if (!exists) throw error;
        }
        let deleted!: () => void;
        const gone = new Promise<void>((resolve) => (deleted = resolve));
        const stat = await call<zookeeper.Stat | null>((done) => client.exists(path, () => deleted(), done));
        if (stat) await gone;
      }
      return { release: () => call((done) => client.remove(path, -1, done)) };
    },
  };
}

/** A signed 64-bit advisory lock key for a benchmark key (the floor needs no stated hash). */
const advisoryKey = (key: string): string => {
  let hash = 0n;
  for (const byte of Buffer.from(key)) hash = (hash * 131n + BigInt(byte)) & 0x7fffffffffffffffn;
  return hash.toString();
};

/** The floor's fencing-token sequence (made once per benchmark process; it may exist already). */
const FLOOR_SEQUENCE = 'lockstock_bench_floor_tokens';

/**
 * PostgreSQL's floor: `pg_try_advisory_lock` + `pg_advisory_unlock`, raw round trips on one
 * connection per acquisition (a session lock lives in its connection: concurrent acquirers need one
 * each — connections are kept and reused, never opened per pair). A refused try waits in
 * PostgreSQL's own lock queue (`pg_advisory_lock`), not by polling. The same guarantee as the lock it
 * is the floor of includes a fencing token: a granted try draws one from a sequence in its own
 * statement (`nextval`, no extra round trip), as etcd's floor gets its key's create revision.
 */
export function postgresFloor(url: string): StoreLock {
  const idle: pg.Client[] = [];
  const all: pg.Client[] = [];
  let sequence: Promise<unknown> | undefined;
  const take = async () => {
    const ready = idle.pop();
    if (ready) return ready;
    const client = new pg.Client({ connectionString: url });
    all.push(client);
    await client.connect();
    // Processes making it at the same moment: one wins the catalog's unique index, the others fail
    // with the sequence there all the same (23505, 42P07).
    await (sequence ??= client
      .query(`CREATE SEQUENCE IF NOT EXISTS ${FLOOR_SEQUENCE}`)
      .catch((error: unknown) => {
        const code = (error as { code?: unknown }).code;
        if (code !== '23505' && code !== '42P07') throw error;
      }));
    return client;
  };
  return {
    acquire: async (key) => {
      const client = await take();
      const id = advisoryKey(key);
      const { rows } = await client.query<{ token: string | null }>(
        `SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval('${FLOOR_SEQUENCE}') END AS token`,
        [id],
      );
      if (rows[0]?.token == null) {
        await client.query(`SELECT pg_advisory_lock($1), nextval('${FLOOR_SEQUENCE}') AS token`, [id]);
      }
      return {
        release: async () => {
          await client.query('SELECT pg_advisory_unlock($1)', [id]);
          idle.push(client);
        },
      };
    },
    close: async () => {
      await Promise.all(all.map((client) => client.end()));
    },
  };
}

/**
 * advisory-lock (npm): `createMutex(name).lock()` opens a connection of its own, waits in
 * `pg_advisory_lock`, and the returned unlock runs `pg_advisory_unlock` and closes it — a connection
 * per acquisition, as the package does out of the box.
 */
export function advisoryLock(loaded: unknown, url: string): StoreLock {
  // A CommonJS module with an `exports.default`: ESM sees it under default, or default.default.
  type Factory = typeof import('advisory-lock').default;
  const outer = (loaded as { default?: unknown }).default;
  const factory = (typeof outer === 'function' ? outer : (outer as { default: unknown }).default) as Factory;
  const createMutex = factory(url);
  return {
    acquire: async (key) => ({ release: await createMutex(key).lock() }),
  };
}

/**
 * MariaDB draws the floor's fencing tokens from a sequence (CACHE 1000, as lockstock's), made once;
 * MySQL has no sequences: its floor draws none (lockstock's upsert would cost it a row write).
 */
async function floorSequence(connection: mysql.Connection): Promise<boolean> {
  const [rows] = await connection.query('SELECT VERSION() AS version');
  if (!/mariadb/i.test(String((rows as Array<{ version: unknown }>)[0]?.version))) return false;
  await connection
    .query(`CREATE SEQUENCE IF NOT EXISTS ${FLOOR_SEQUENCE} CACHE 1000 ENGINE = InnoDB`)
    .catch((error: unknown) => {
      // Another process made it at the same moment (ER_TABLE_EXISTS_ERROR): it is there.
      if ((error as { errno?: unknown }).errno !== 1050) throw error;
    });
  return true;
}

/**
 * MySQL's floor: `GET_LOCK(name, 0)` + `RELEASE_LOCK(name)`, raw round trips on one connection per
 * acquisition (a user lock lives in its session, and a session re-enters its own locks: concurrent
 * acquirers need one each — connections are kept and reused, never opened per pair). A refused try
 * waits in the server's own queue (a blocking `GET_LOCK`), not by polling. On MariaDB a granted try
 * draws a fencing token in its own statement, as lockstock's does (floorSequence).
 */
export function mysqlFloor(url: string): StoreLock {
  const idle: mysql.Connection[] = [];
  const all: mysql.Connection[] = [];
  let sequence: Promise<boolean> | undefined;
  const take = async () => {
    const ready = idle.pop();
    if (ready) return ready;
    const connection = await mysql.createConnection(url);
    all.push(connection);
    await (sequence ??= floorSequence(connection));
    return connection;
  };
  return {
    acquire: async (key) => {
      const connection = await take();
      // MariaDB: the token drawn in the try's own statement, only when granted (IF runs one branch).
      const [rows] = (await sequence)
        ? await connection.query(`SELECT IF(GET_LOCK(?, 0) = 1, NEXTVAL(${FLOOR_SEQUENCE}), NULL) AS got`, [
            key,
          ])
        : await connection.query('SELECT GET_LOCK(?, 0) AS got', [key]);
      const got = (rows as Array<{ got: number | string | null }>)[0]?.got;
      if (got == null || Number(got) === 0) {
        await connection.query('SELECT GET_LOCK(?, 31536000) AS got', [key]); // a year: until granted
        if (await sequence) await connection.query(`SELECT NEXTVAL(${FLOOR_SEQUENCE}) AS token`);
      }
      return {
        release: async () => {
          await connection.query('SELECT RELEASE_LOCK(?)', [key]);
          idle.push(connection);
        },
      };
    },
    close: async () => {
      await Promise.all(all.map((connection) => connection.end()));
    },
  };
}
