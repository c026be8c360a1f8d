import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { RedisLockClient } from 'lockstock';
import type { ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from '../sale/context/context.js';
import type { Database } from '../sale/store/db.js';
import type { LabServerKind, LabServers } from './servers.js';

/** What a strategy runs on, in the coordinator and in every worker process. */
export interface LabEnv {
  readonly redis: Redis;
  /** The lab's Redis, for strategies that open connections of their own (Redlock, Sentinel). */
  readonly redisUrl: string;
  readonly pg: pg.Pool;
  /** The lab's PostgreSQL, for strategies that open connections of their own (advisory locks). */
  readonly databaseUrl: string;
  /** The extra servers the selected strategies need (Strategy.servers), by kind. */
  readonly servers: LabServers;
  readonly locks: RedisLockClient;
  readonly scripts: ScriptRunner;
  /** The same PostgreSQL as `pg`, behind the sale layer's interface (for the service strategy). */
  readonly db: Database;
  /** This process's sale context on `redis` (for the service strategy and the fairness lab). */
  readonly sale: SaleContext;
  /**
   * What this process keeps across runs under `key` (a lock client, a connection pool): opened by
   * the first call, closed with the env. Workers serve many runs; a client per run would pay its
   * session's setup in every run and leave sessions behind.
   */
  shared<T>(key: string, open: () => T, close: (value: T) => Promise<void>): T;
}

/** One run of one strategy: fresh state under its own id. */
export interface LabRun {
  readonly runId: string;
  readonly stock: number;
  /** Strategy knobs (e.g. optimistic retries, segments); JSON-serialisable. */
  readonly options: Readonly<Record<string, number | string | boolean>>;
}

/** What the posts and tutorials the design comes from expect of it. */
export type Expectation =
  | 'correct'
  | 'oversells'
  | 'negative_stock'
  | 'oversells_across_processes'
  | 'stalls'
  | 'may_leave_unsold'
  /**
   * Judges buyers where it cannot see the whole sale: tells them "sold out" while units are left (and
   * leaves those unsold), or sells one buyer twice — whichever the run's buyers happen to provoke.
   */
  | 'sells_out_early_or_twice';

export interface Strategy {
  readonly name: string;
  readonly title: string;
  /** Where the design comes from (flash-sale blog posts, tutorials…) and what they claim of it, in one or two sentences. */
  readonly claim: string;
  readonly expectation: Expectation;
  /** Our reading where the claim needs a caveat (shown in the HTML report). */
  readonly note?: string;
  /**
   * The lock backend of a lock-based sale (strategies/lock-sale.ts), e.g. 'ZooKeeper': the report
   * sets these rows side by side.
   */
  readonly lockBackend?: string;
  /** Servers beyond Redis and PostgreSQL that it runs on; the lab starts them only when needed. */
  readonly servers?: readonly LabServerKind[];
  /**
   * Sets up fresh state for `run` (coordinator). May return options for the workers (e.g. the id of
   * what it created); they are merged into `run.options`.
   */
  prepare(env: LabEnv, run: LabRun): Promise<void | Record<string, string | number>>;
  /**
   * Called once per worker process per run; returns the purchase attempt, shared by all concurrent
   * buyers of that process (so in-process state such as a local mutex is shared as in an app).
   * Resolves true when the strategy believes it sold; it must record the order where `inspect`
   * reads it, as the tutorials' code does (an INSERT, an RPUSH).
   */
  buyer(env: LabEnv, run: LabRun): Promise<(buyer: string) => Promise<boolean>>;
  /**
   * Reads what was recorded (coordinator): the orders' buyers and the final stock; where the record
   * keeps it, the time of each sale (ms, the store's clock on this machine), which tells a buyer told
   * "sold out" before a later sale that units were left.
   */
  inspect(env: LabEnv, run: LabRun): Promise<{ orders: string[]; finalStock: number; soldAtMs?: number[] }>;
  /**
   * Stops what the strategy started once per lab (coordinator, after every run and the workers):
   * e.g. Redlock's extra masters. Servers left running would outlive the lab.
   */
  teardown?(): Promise<void>;
}

/** What a worker recorded about one attempt. */
export interface Attempt {
  buyer: string;
  believedSold: boolean;
  ms: number;
  /** When the answer came, ms since the epoch (the machine's clock, which the stores stamp sales with). */
  atMs?: number;
  error?: string;
}
