import {
  LockElection,
  proclaimedValue,
  type BackendCapabilities,
  type BackendHost,
  type LatchResource,
  type LockBackend,
  type LockResource,
  type SubscribeWakes,
} from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { Election, Leader } from '../locks/types.js';
import type { MySqlLockContext } from './context.js';
import { mysql, type Pool, type PoolOptions, type ResultSetHeader } from './driver.js';
import { interrupted } from './errors.js';
import { ExclusiveResource, type ExclusiveFamily } from './exclusive.js';
import {
  DEFAULT_FENCING_SEQUENCE,
  DEFAULT_FENCING_TABLE,
  fencingStatements,
  prepareServer,
  quoteTable,
} from './fencing.js';
import { electionName, lockName } from './names.js';
import { PermitResource } from './semaphore.js';
import { Sessions } from './sessions.js';
import { fill, SQL } from './sql.js';
import type { BlockingWait, MySqlSession } from './session.js';
import { checkMySqlServer } from './server-checks.js';
import type { ServerFinding } from '../locks/server-checks.js';

/**
 * The MySQL or MariaDB backend's own options (MySqlLockClientOptions adds the client's): the server,
 * the pool, where fencing tokens are kept, and how often sessions that carry holds are checked.
 */
export interface MySqlBackendOptions {
  /**
   * The MySQL or MariaDB to use: a `mysql://` URI or mysql2 pool options. The client makes its own
   * pools from it (one for holds and waits, a small one for cancels and looks) and closes them. Each
   * hold pins one connection, and so does each waiting caller's wait: size it for them.
   */
  mysql: string | PoolOptions;
  /** Connections of the pool holds and waits pin (unless the options set `connectionLimit`). @default 20 */
  maxConnections?: number;
  /** The fencing table (`table` or `database.table`), created if missing. @default 'lockstock_fencing' */
  fencingTable?: string;
  /**
   * MariaDB ≥ 10.3: the sequence every lock's tokens come from (`sequence` or `database.sequence`),
   * created if missing; elections, and MySQL, draw from the fencing table. @default 'lockstock_fencing_seq'
   */
  fencingSequence?: string;
  /**
   * How often each session carrying a hold must answer a statement (within the same time), ms; one
   * that does not is ended and its hold is lost. Finds connections that stop answering without
   * closing (a partition, a paused server), which the socket alone would report only after TCP gives
   * up. 0 turns it off.
   * @default 5000
   */
  sessionCheckMs?: number;
}

/** One server-side wait lasts this long before the waiter queues again, ms. */
const WAIT_SLICE_MS = 10_000;

const MUTEX: ExclusiveFamily = { reentrant: false, waits: 'queue', serverOrder: false, records: false };
const REENTRANT: ExclusiveFamily = { ...MUTEX, reentrant: true };
/** Every waiter of every client queues in the server's user-lock queue, which grants in arrival order. */
const FAIR: ExclusiveFamily = { ...REENTRANT, serverOrder: true };
const SPIN: ExclusiveFamily = { ...REENTRANT, waits: 'backoff' };
/** An election's lock: a mutex whose grants record their holder (the leader, for leader.sql). */
const CANDIDATE: ExclusiveFamily = { ...MUTEX, records: true };

const CAPABILITIES: BackendCapabilities = Object.freeze({
  leases: 'session',
  fencing: 'counter',
  wakeUps: 'watch',
  unsupported: Object.freeze({
    'read-write':
      'GET_LOCK locks are exclusive only: MySQL and MariaDB have no shared user lock for the read side ' +
      '(use PostgreSQL, whose advisory locks have a shared mode, or Redis, ZooKeeper or etcd)',
    'counter-semaphore':
      "its permits must outlive their holders' sessions, and GET_LOCK locks end with the session: " +
      'use semaphore(), whose permits come back when a holder is gone',
    latch: 'a latch keeps a count beyond every session, and user locks keep no data: use a table row',
  }),
});

/**
 * The MySQL/MariaDB backend: user locks (GET_LOCK) held by pinned sessions (see MySqlSession), waiting
 * in the server's queue (BlockingWait; cancelled with KILL QUERY from a control connection),
 * semaphores as N user locks, fencing tokens from one sequence (MariaDB ≥ 10.3) or a table (one row per
 * lock name), elections on a lock whose last grant the table records. A dropped or killed connection loses exactly its hold, at once.
 */
export class MySqlBackend implements LockBackend {
  readonly name = 'mysql';
  readonly capabilities = CAPABILITIES;
  readonly subscribe: SubscribeWakes | undefined = undefined;
  /** Holds and waits pin connections of this pool. */
  readonly pool: Pool;
  /** Cancels, inspections, forceUnlock and elections' reads: never starved by pinned connections. */
  readonly control: Pool;
  /** Whether the server is MariaDB (KILL QUERY ID); undefined before the first lock. */
  mariadb: boolean | undefined;
  /** Whether tokens come from the fencing sequence (MariaDB ≥ 10.3); undefined before the first lock. */
  sequence: boolean | undefined;
  private readonly sessions: Sessions;
  private readonly sessionCheckMs: number;
  private readonly ctx: MySqlLockContext;

  constructor(
    options: MySqlBackendOptions,
    private readonly host: BackendHost,
  ) {
    const report = host.reportError;
    const base: PoolOptions = typeof options.mysql === 'string' ? { uri: options.mysql } : options.mysql;
    const driver = mysql();
    this.pool = driver.createPool({
      enableKeepAlive: true, // a silently dropped connection is found by the kernel too
      connectionLimit: options.maxConnections ?? 20,
      ...base,
    });
    this.control = driver.createPool({ enableKeepAlive: true, ...base, connectionLimit: 2 });
    const table = quoteTable(options.fencingTable ?? DEFAULT_FENCING_TABLE);
    const sequence = quoteTable(options.fencingSequence ?? DEFAULT_FENCING_SEQUENCE);
    const statements = fencingStatements(table, sequence);
    this.sessions = new Sessions({
      pool: this.pool,
      report,
      checkMs: (this.sessionCheckMs = options.sessionCheckMs ?? 5_000),
      prepare: async () => {
        ({ mariadb: this.mariadb, sequence: this.sequence } = await prepareServer(
          this.control,
          table,
          sequence,
        ));
      },
    });
    const drawToken = async (session: MySqlSession, tokenName: string, owner: string, record: boolean) => {
      // On MySQL a cancel that raced the grant may end this statement instead of the wait: once more.
      const run = async () => {
        if (record)
          return (await session.write(statements.drawTokenRecorded, [tokenName, owner, owner])).insertId;
        if (this.sequence) {
          const [row] = await session.rows<{ token: number | string }>(statements.drawTokenSequence);
          return row!.token;
        }
        return (await session.write(statements.drawToken, [tokenName])).insertId;
      };
      const token = await run().catch((error: unknown) => {
        if (interrupted(error)) return run();
        throw error;
      });
      return Number(token);
    };
    this.ctx = {
      pool: this.pool,
      control: this.control,
      sessions: this.sessions,
      statements,
      waitSliceMs: WAIT_SLICE_MS,
      report,
      tryTake: async (session, serverName, tokenName, owner, record) => {
        if (!record && this.sequence) {
          // The token from the sequence, no table write (try-lock-sequence.sql): increasing globally,
          // so per name too.
          const [row] = await session.rows<{ token: number | string | null }>(statements.tryLockSequence, [
            serverName,
          ]);
          return row?.token == null ? undefined : Number(row.token);
        }
        const header: ResultSetHeader = record
          ? await session.write(statements.tryLockRecorded, [tokenName, owner, serverName, owner])
          : await session.write(statements.tryLock, [tokenName, serverName]);
        return header.affectedRows > 0 ? Number(header.insertId) : undefined;
      },
      waitHooks: (tokenName, owner, record) => ({
        cancel: (connectionId) => this.cancelWait(connectionId),
        drawToken: (session) => drawToken(session, tokenName, owner, record),
        giveBack: (wait: BlockingWait) =>
          wait.session.serial(async () => {
            await wait.session.rows(SQL.release, [wait.serverName]);
          }),
        settled: (wait: BlockingWait) => {
          const { session } = wait;
          if (session.wait === wait) session.wait = undefined;
          // A wait killed or failed just after its grant may leave the lock taken (release-all.sql).
          if (wait.state === 'failed') session.unclean = true;
          this.sessions.settle(session);
        },
        report,
      }),
    };
  }

  /**
   * Ends a waiting GET_LOCK of connection `id` from a control connection, only while it waits for a
   * user lock: on MariaDB by its query id (exactly that statement), on MySQL the connection's current
   * statement (the statements after a wait retry once if a late kill reaches them).
   */
  private async cancelWait(id: number): Promise<boolean> {
    if (this.mariadb !== false) {
      const [rows] = await this.control.query(SQL.waitingQuery, [id]);
      const query = (rows as Array<{ query_id?: unknown }>)[0]?.query_id;
      if (query == null) return false;
      await this.control.query(fill(SQL.cancelQuery, { query: Number(query) }));
      return true;
    }
    const [rows] = await this.control.query(SQL.waitingConnection, [id]);
    if ((rows as unknown[]).length === 0) return false;
    await this.control.query(fill(SQL.cancelConnection, { connection: id }));
    return true;
  }

  mutex(name: string): LockResource {
    return new ExclusiveResource(this.ctx, name, lockName(name), MUTEX);
  }

  reentrant(name: string): LockResource {
    return new ExclusiveResource(this.ctx, name, lockName(name), REENTRANT);
  }

  fair(name: string): LockResource {
    return new ExclusiveResource(this.ctx, name, lockName(name), FAIR);
  }

  spin(name: string): LockResource {
    return new ExclusiveResource(this.ctx, name, lockName(name), SPIN);
  }

  semaphore(name: string, permits: number): LockResource {
    return new PermitResource(this.ctx, name, permits);
  }

  /**
   * A term is a hold of a mutex on the election's own user lock; its token is the lock's fencing
   * token. The leader is the owner the fencing table recorded for the lock's last grant, while the
   * connection of that grant still holds the lock (leader.sql). Observers poll (MySQL has no watches).
   */
  election(name: string): Election {
    const resource = new ExclusiveResource(this.ctx, name, electionName(name), CANDIDATE);
    const lock = this.host.lock(resource, 'mutex');
    return new LockElection(name, lock, async (): Promise<Leader | undefined> => {
      await this.sessions.ready();
      const [rows] = await this.control.query(this.ctx.statements.leader, [
        resource.serverName,
        resource.serverName,
      ]);
      const row = (rows as Array<{ holder: string; token: number | string }>)[0];
      const value = row && proclaimedValue(row.holder);
      return value === undefined ? undefined : { value, fencingToken: Number(row!.token) };
    });
  }

  /**
   * Ends the connections holding the lock (KILL CONNECTION of IS_USED_LOCK's answer): the server frees
   * their locks, and their clients lose those holds at once (their connections end). Whatever else a
   * killed connection held ends too. Between the look and the kill the holder may have released, and
   * its connection taken another lock: an administrator's tool, not a lock operation.
   */
  async forceUnlock(made: LockResource | LatchResource): Promise<boolean> {
    if (!(made instanceof ExclusiveResource) && !(made instanceof PermitResource)) {
      throw new InvalidLockOptionError('lock', 'a lock created by this client', made);
    }
    let killed = false;
    for (const name of made.holderNames) {
      const [rows] = await this.control.query(SQL.holder, [name]);
      const holder = (rows as Array<{ holder: unknown }>)[0]?.holder;
      if (holder == null) continue;
      try {
        await this.control.query(fill(SQL.killConnection, { connection: Number(holder) }));
        killed = true;
      } catch (error) {
        if ((error as { errno?: unknown }).errno !== 1094) throw error; // ER_NO_SUCH_THREAD: gone already
      }
    }
    return killed;
  }

  checkServer(): Promise<ServerFinding[]> {
    return checkMySqlServer(this.control, this.sessionCheckMs);
  }

  async close(): Promise<void> {
    this.sessions.closeAll();
    await Promise.all([this.pool.end(), this.control.end()]);
  }
}
