import type {
  BackendCapabilities,
  BackendHost,
  LatchResource,
  LockBackend,
  LockResource,
  SubscribeWakes,
} from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import { AdvisoryLockResource, type AdvisoryFamily } from './advisory.js';
import type { PostgresLockContext } from './context.js';
import { pg, type Pool } from './driver.js';
import { DeadlockDetector } from './deadlocks.js';
import { DEFAULT_SEQUENCE, prepareSequence, type SequenceName } from './fencing.js';
import { Listener } from './listener.js';
import { checkPooler, type PoolerVerdict } from './pooler.js';
import { checkPostgresServer } from './server-checks.js';
import type { ServerFinding } from '../locks/server-checks.js';
import { PermitResource } from './semaphore.js';
import { Sessions } from './sessions.js';
import { SQL } from './sql.js';

/**
 * The PostgreSQL backend's own options (PostgresLockClientOptions adds the client's): the database or
 * pool, how holds are kept (session or transaction advisory locks), where fencing tokens come from,
 * and how often sessions that carry holds are checked.
 */
export interface PostgresBackendOptions {
  /**
   * The PostgreSQL to use: a `pg.Pool` you own (close() leaves it open), or a connection string for
   * a pool the client makes and closes. Each hold pins one connection, and so does each waiting
   * caller's wait: size the pool for them.
   */
  postgres: Pool | string;
  /** Connections of the pool the client makes from a connection string. @default 20 */
  maxConnections?: number;
  /**
   * 'session': session advisory locks, each hold in its owner's pinned session (refused behind a
   * transaction-mode pooler). 'transaction': each hold keeps a transaction open on its pinned
   * connection and takes transaction-level advisory locks, which end with it — for transaction-mode
   * poolers (pgbouncer), at the price of an open transaction per hold.
   * @default 'session'
   */
  scope?: 'session' | 'transaction';
  /** Check for a transaction-mode pooler before the first session lock (pooler.ts). @default true */
  poolerCheck?: boolean;
  /** Schema of the fencing-token sequence. @default the connection's current schema */
  schema?: string;
  /** Name of the fencing-token sequence, created if missing. @default 'lockstock_fencing_tokens' */
  fencingSequence?: string;
  /**
   * How often each session carrying holds must answer a statement (within the same time), ms; one
   * that does not is ended and its holds are lost. Finds connections that stop answering without
   * closing (a partition, a hung server), which the socket alone would report only after TCP gives
   * up. 0 turns it off.
   * @default 5000
   */
  sessionCheckMs?: number;
}

/** One server-side wait lasts this long before the waiter queues again (its lock_timeout), ms. */
const WAIT_SLICE_MS = 10_000;

const MUTEX: AdvisoryFamily = {
  mode: 'exclusive',
  reentrant: false,
  waits: 'queue',
  serverOrder: false,
  upgradeRefused: false,
};
const REENTRANT: AdvisoryFamily = { ...MUTEX, reentrant: true };
/** Every waiter of every client queues in PostgreSQL's lock queue, which grants in arrival order. */
const FAIR: AdvisoryFamily = { ...REENTRANT, serverOrder: true };
const SPIN: AdvisoryFamily = { ...REENTRANT, waits: 'backoff' };
const READ: AdvisoryFamily = { ...REENTRANT, mode: 'shared' };
const WRITE: AdvisoryFamily = { ...REENTRANT, upgradeRefused: true };

const CAPABILITIES: BackendCapabilities = Object.freeze({
  leases: 'session',
  fencing: 'counter',
  wakeUps: 'watch',
  unsupported: Object.freeze({
    'counter-semaphore':
      "its permits must outlive their holders' sessions, and advisory locks end with the session: " +
      'use semaphore(), whose permits come back when a holder is gone',
    latch: 'a latch keeps a count beyond every session, and advisory locks keep no data: use a table row',
    election:
      "observers must read the leader's value, and an advisory lock records only the holding backend: " +
      'a mutex with a fencing token is the leader lock; publish the value in a table under it',
  }),
});

/**
 * The PostgreSQL backend: advisory locks held by pinned sessions (see PostgresSession), waiting in
 * PostgreSQL's lock queue (BlockingWait), semaphores as N advisory locks woken by NOTIFY, fencing
 * tokens from one sequence. A dropped connection loses exactly the holds it carried, at once.
 */
export class PostgresBackend implements LockBackend {
  readonly name = 'postgres';
  readonly capabilities = CAPABILITIES;
  readonly pool: Pool;
  readonly subscribe: SubscribeWakes;
  /** What the pooler check found ('direct', 'session-pooler'); undefined before the first lock. */
  pooler: PoolerVerdict | undefined;
  private readonly ownsPool: boolean;
  private readonly scope: 'session' | 'transaction';
  private readonly sessionCheckMs: number;
  private readonly sessions: Sessions;
  private readonly listener: Listener;
  private readonly ctx: PostgresLockContext;
  private sequenceName: string | undefined;
  private readonly sequence: SequenceName;

  constructor(options: PostgresBackendOptions, host: BackendHost) {
    const report = host.reportError;
    if (typeof options.postgres === 'string') {
      this.pool = new (pg().Pool)({
        connectionString: options.postgres,
        max: options.maxConnections ?? 20,
        // A silently dropped connection (no FIN) is then found by the kernel, not only by a query.
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
        // Every hold and every waiting caller pins a connection: when all are pinned, an acquire
        // fails (LockBackendError) after this long instead of waiting for one without a bound.
        connectionTimeoutMillis: 10_000,
      });
      this.ownsPool = true;
      // An idle pooled connection that drops must not be an unhandled 'error' event.
      this.pool.on('error', (error) => host.events.emit('connectionError', error));
    } else {
      this.pool = options.postgres;
      this.ownsPool = false;
    }
    const scope = (this.scope = options.scope ?? 'session');
    const sequence = (this.sequence = {
      schema: options.schema,
      name: options.fencingSequence ?? DEFAULT_SEQUENCE,
    });
    const poolerCheck = scope === 'session' && options.poolerCheck !== false;
    this.sessions = new Sessions({
      pool: this.pool,
      scope,
      report,
      checkMs: (this.sessionCheckMs = options.sessionCheckMs ?? 5_000),
      prepare: async (session, lockName) => {
        this.sequenceName = await prepareSequence(session.client, sequence);
        if (poolerCheck) this.pooler = await checkPooler(this.pool, session, lockName, report);
      },
    });
    this.listener = new Listener(this.pool, report);
    this.subscribe = this.listener.subscribe;
    this.ctx = {
      pool: this.pool,
      sessions: this.sessions,
      sequence: () => {
        if (this.sequenceName === undefined) throw new Error('the fencing sequence is not ready');
        return this.sequenceName;
      },
      waitSliceMs: WAIT_SLICE_MS,
      deadlocks: new DeadlockDetector(this.pool, report),
      report,
    };
  }

  /** The fencing sequence's server-quoted name, once a first session resolved it. */
  get fencingSequence(): string | undefined {
    return this.sequenceName;
  }

  /** Resolves (and creates if missing) the fencing sequence, on a connection of the pool. */
  async prepareSequence(): Promise<string> {
    if (this.sequenceName !== undefined) return this.sequenceName;
    const client = await this.pool.connect();
    try {
      return (this.sequenceName = await prepareSequence(client, this.sequence));
    } finally {
      client.release();
    }
  }

  mutex(name: string): LockResource {
    return new AdvisoryLockResource(this.ctx, name, MUTEX);
  }

  reentrant(name: string): LockResource {
    return new AdvisoryLockResource(this.ctx, name, REENTRANT);
  }

  fair(name: string): LockResource {
    return new AdvisoryLockResource(this.ctx, name, FAIR);
  }

  spin(name: string): LockResource {
    return new AdvisoryLockResource(this.ctx, name, SPIN);
  }

  readWrite(name: string): { read: LockResource; write: LockResource } {
    return {
      read: new AdvisoryLockResource(this.ctx, name, READ),
      write: new AdvisoryLockResource(this.ctx, name, WRITE),
    };
  }

  semaphore(name: string, permits: number): LockResource {
    return new PermitResource(this.ctx, name, permits);
  }

  /**
   * Ends the sessions holding the lock (pg_terminate_backend): their locks go with them, and their
   * clients lose those holds at once (their connections end). Other holds of those sessions end too.
   */
  async forceUnlock(made: LockResource | LatchResource): Promise<boolean> {
    if (!(made instanceof AdvisoryLockResource) && !(made instanceof PermitResource)) {
      throw new InvalidLockOptionError('lock', 'a lock created by this client', made);
    }
    const { keys, mode } = made.holderKeys;
    const { rows } = await this.pool.query<{ terminated: string }>(SQL.terminateHolders, [keys, mode]);
    // Ended sessions send no NOTIFY: wake the semaphore's waiters here.
    if (made instanceof PermitResource) await this.pool.query(SQL.notify, [made.wakeChannel]);
    return Number(rows[0]?.terminated) > 0;
  }

  checkServer(): Promise<ServerFinding[]> {
    return checkPostgresServer(this.pool, this.scope, this.sessionCheckMs);
  }

  async close(): Promise<void> {
    this.sessions.closeAll();
    await this.listener.close();
    if (this.ownsPool) await this.pool.end();
  }
}
