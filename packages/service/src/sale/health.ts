import { bounded } from '../support/bounded.js';
import { loadLuaScript } from 'lockstock/redis';
import type { SaleContext } from './context/context.js';
import { ORDER_GROUP } from './keys.js';
import type { PipelineHealth } from './pipeline/order-pipeline.js';
import { isSplit, LayoutCache, layoutKeys } from './shards/layout.js';
import type { SaleRedis } from './redis.js';
import type { Database } from './store/db.js';
import { queries } from './store/queries.js';

// The dashboard's per-sale read; its backlog figures are the one definition of "unrecorded".
const statsScript = loadLuaScript(new URL('./stats.lua', import.meta.url));

export type DependencyState = 'ok' | 'down';

/**
 * - `ok`: nothing waits longer than `behindAfterMs` to be recorded and no local consumer fails.
 * - `retrying`: a pipeline in this process fails every step (its database or Redis is down) and
 *   retries; nothing is lost, reservations wait in their streams.
 * - `behind`: the oldest unrecorded reservation is older than `behindAfterMs` (no worker running,
 *   or workers that cannot write) — seen from any process, pipelines in it or not.
 * - `unknown`: Redis is down, so the backlog cannot be read.
 */
export type PipelineState = 'ok' | 'retrying' | 'behind' | 'unknown';

/** What a 202 means on this deployment (see README "Durability"). */
export interface DurabilityReport {
  /** fsync: on disk before the answer; memory: in Redis memory (a machine crash loses the last second). */
  readonly setting: 'fsync' | 'memory';
  /** Redis's `appendfsync` as read at start ('off': no AOF; 'unknown': CONFIG is disabled). */
  readonly redisAppendfsync: 'always' | 'everysec' | 'no' | 'off' | 'unknown';
  /** True when the server's settings give what `setting` promises. */
  readonly honoured: boolean;
  /**
   * Whether the record syncs its commits to the disk ('on': `fsync` on and `synchronous_commit` not
   * off), as the record's PostgreSQL (or PGlite) reports it. Orders the pipeline has recorded are
   * acknowledged on the stream, so with 'off' a crash of the machine can lose recorded orders.
   */
  readonly recordFsync?: 'on' | 'off' | 'unknown';
}

/** Reads how the Redis server persists writes, against what `setting` promises (at start). */
export async function readDurability(
  redis: SaleRedis,
  setting: DurabilityReport['setting'],
): Promise<DurabilityReport> {
  let redisAppendfsync: DurabilityReport['redisAppendfsync'] = 'unknown';
  try {
    // On a Cluster the first master answers for all: the harness and operators configure them alike.
    const node = 'nodes' in redis ? (redis.nodes('master')[0] ?? redis) : redis;
    const [, appendonly] = (await node.config('GET', 'appendonly')) as string[];
    const [, appendfsync] = (await node.config('GET', 'appendfsync')) as string[];
    redisAppendfsync =
      appendonly !== 'yes' ? 'off' : ((appendfsync as DurabilityReport['redisAppendfsync']) ?? 'unknown');
  } catch {
    // CONFIG disabled (managed Redis): unknown, reported as such.
  }
  const honoured = setting === 'memory' || redisAppendfsync === 'always';
  return { setting, redisAppendfsync, honoured };
}

/** Whether the record's database syncs commits to the disk, as it reports it (`recordFsync`). */
export async function readRecordFsync(db: Database): Promise<'on' | 'off' | 'unknown'> {
  try {
    const { rows } = await db.query<{ fsync: string; sync: string }>(queries.recordFsync);
    const row = rows[0];
    if (!row) return 'unknown';
    return row.fsync === 'on' && row.sync !== 'off' ? 'on' : 'off';
  } catch {
    return 'unknown';
  }
}

export interface HealthReport {
  /** `down`: Redis is down, nothing can be sold; `degraded`: selling works, the record lags or is down. */
  status: 'ok' | 'degraded' | 'down';
  redis: DependencyState;
  database: DependencyState;
  pipeline: PipelineState;
  backlog: {
    /** Age of the oldest reservation not yet recorded, ms (Redis clock); null: none, or unknown. */
    oldestUnrecordedMs: number | null;
    /** Pipeline consumers in this process (0 for `serve --workers 0`). */
    consumers: number;
    /** How long the longest-failing local consumer has been retrying, ms; null: none is. */
    retryingForMs: number | null;
  };
  /** Sales this process does not sell now: being rebuilt from the record (they answer 503). */
  recovering: string[];
  durability?: DurabilityReport;
}

export interface HealthDeps {
  context: SaleContext;
  db: Database;
  /** The pipelines running in this process. */
  pipelines?: () => readonly PipelineHealth[];
  /** A probe that has not answered within this is `down`, ms. @default 1000 */
  timeoutMs?: number;
  /** Unrecorded reservations older than this make the pipeline `behind`, ms. @default 10000 */
  behindAfterMs?: number;
  /** Sales being rebuilt from the record (the recovery monitor). */
  recovering?: () => readonly string[];
  durability?: DurabilityReport;
  /** Sales whose backlog is read, at most. @default 50 */
  maxSales?: number;
  /** Layouts of split sales (whose backlog is in their parts' streams). @default Redis's */
  layouts?: LayoutCache;
}

/** Probes Redis and the database (bounded by `timeoutMs`) and reads the pipeline's backlog. */
export async function checkHealth(deps: HealthDeps): Promise<HealthReport> {
  const timeoutMs = deps.timeoutMs ?? 1000;
  const [redis, database, oldest] = await Promise.all([
    probe(() => deps.context.redis.ping(), timeoutMs),
    probe(() => deps.db.query('SELECT 1'), timeoutMs),
    bounded(readOldestUnrecordedMs(deps), timeoutMs).catch(() => undefined),
  ]);
  const pipelines = deps.pipelines?.() ?? [];
  const now = Date.now();
  const failing = pipelines.flatMap((p) => (p.failingSince === undefined ? [] : [now - p.failingSince]));
  const retryingForMs = failing.length > 0 ? Math.max(...failing) : null;
  const oldestUnrecordedMs = redis === 'ok' && oldest !== undefined ? oldest : null;
  const pipeline: PipelineState =
    retryingForMs !== null
      ? 'retrying'
      : redis === 'down' || oldest === undefined
        ? 'unknown'
        : (oldestUnrecordedMs ?? 0) > (deps.behindAfterMs ?? 10_000)
          ? 'behind'
          : 'ok';
  const recovering = [...(deps.recovering?.() ?? [])];
  const status =
    redis === 'down'
      ? 'down'
      : database === 'down' || pipeline !== 'ok' || recovering.length > 0
        ? 'degraded'
        : 'ok';
  return {
    status,
    redis,
    database,
    pipeline,
    backlog: { oldestUnrecordedMs, consumers: pipelines.length, retryingForMs },
    recovering,
    ...(deps.durability ? { durability: deps.durability } : {}),
  };
}

async function probe(check: () => Promise<unknown>, timeoutMs: number): Promise<DependencyState> {
  return bounded(check(), timeoutMs).then(
    () => 'ok',
    () => 'down',
  );
}

/** The age of the oldest unrecorded reservation over the open sales' streams, ms; null: none. */
async function readOldestUnrecordedMs(deps: HealthDeps): Promise<number | null> {
  const { prefix, redis, scripts, keys: keyspace } = deps.context;
  const saleIds = (await redis.smembers(keyspace.activeSales)).slice(0, deps.maxSales ?? 50);
  const layouts = deps.layouts ?? new LayoutCache(deps.context);
  const streams = await Promise.all(
    saleIds.map(async (saleId) => {
      const layout = await layouts.get(saleId);
      return isSplit(layout) ? layoutKeys(layout, prefix) : [keyspace.sale(saleId)];
    }),
  );
  const ages = await Promise.all(
    streams.flat().map(async (keys) => {
      const reply = (await scripts.run(
        statsScript,
        [keys.stock, keys.outcomes, keys.visitors, keys.stream, keys.dead],
        [ORDER_GROUP],
      )) as unknown[];
      const [oldest, nowMs] = [reply[6] as string, reply[7] as number];
      return oldest ? Math.max(0, nowMs - Number(oldest.split('-')[0])) : null;
    }),
  );
  const known = ages.filter((age): age is number => age !== null);
  return known.length > 0 ? Math.max(...known) : null;
}
