import { startTracing, type ProcessRole } from './tracing.js';
import { registerProcessMetrics } from './process-metrics.js';
import { DependencyLog } from '../http/dependency-log.js';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { saleContext, type SaleContext } from '../sale/context/context.js';
import { connectSaleRedis, type SaleRedis } from '../sale/redis.js';
import pino, { type Logger } from 'pino';
import { logDestination } from './log-format.js';
import type { Registry } from 'prom-client';
import type { MessagePort } from 'node:worker_threads';
import { SnowflakeIdGenerator } from '../sale/ids/snowflake.js';
import { createSaleMetrics, type SaleMetrics } from '../sale/metrics.js';
import { ExpirySweeper } from '../sale/lifecycle/sweeper.js';
import { offerMsFromEnv } from '../sale/waitlist/settings.js';
import {
  OrderPipeline,
  type OrderPipelineOptions,
  type PipelineHealth,
} from '../sale/pipeline/order-pipeline.js';
import { SaleService } from '../sale/service.js';
import { pgliteDatabase, postgresDatabase, type Database } from '../sale/store/db.js';
import { migrate } from '../sale/store/migrate.js';
import { RedisServer } from '@lockstock/servers';
import { readDurability, readRecordFsync, type DurabilityReport } from '../sale/health.js';
import { RaffleService } from '../sale/raffle/raffles.js';
import { RaffleRunner } from '../sale/raffle/runner.js';
import { beaconSetting } from './beacon.js';
import { RecoveryMonitor } from '../sale/recovery/monitor.js';
import { admissionRestore } from '../sale/admission/restore.js';
import { startOrderThread, ThreadedRegistry, type OrderThread } from './order-thread-host.js';
import { assertScheme, connectionCode, HINTS, UnreachableError } from './unreachable.js';
import type { Resources } from './lifecycle.js';
import { warnTestHooks } from './test-hooks.js';

export interface RuntimeOptions {
  /** REDIS_URL; without it a private redis-server is started with its data in `dataDir`. */
  redisUrl?: string;
  /** DATABASE_URL; without it the order store is PGlite with its data in `dataDir`. */
  databaseUrl?: string;
  /**
   * An order record opened by the caller, used as it is (not migrated, not closed by the runtime's
   * owner): an HTTP process of `serve --processes N` reaches the primary's embedded store this way.
   */
  record?: Database;
  /** The registry of this process's metrics (an HTTP process's answers for the whole service). */
  metricsRegistry?: Registry;
  /** Where embedded data lives. @default ".lockstock" */
  dataDir?: string;
  /** Order pipeline workers in this process. @default 1 */
  pipelines?: number;
  /** Settings of those workers. */
  pipeline?: Omit<OrderPipelineOptions, 'logger' | 'metrics'>;
  /**
   * A Redis command without an answer after this fails (a purchase then answers 503), ms. Without it
   * a Redis that hangs (paused, a network black hole) would hold every request until the client gave
   * up. Longer than the pipeline's blocking read (1 s). @default 3000
   */
  redisCommandTimeoutMs?: number;
  /** What this process is, in its traces and /metrics. @default "serve" with httpServer set, else "tool" */
  role?: ProcessRole;
  /** The process answers HTTP: see SaleServiceDeps.batchWritesPerPhase. @default false */
  httpServer?: boolean;
  /**
   * Record orders in a worker thread (the order thread): the embedded store, the pipelines and the
   * expiry sweeper, off this thread's event loop (`serve`, whose event loop answers HTTP). Test hooks
   * (`pipeline.faults`) do not cross to it. @default false
   */
  orderThread?: boolean;
  /**
   * What a 202 means (see README "Durability"): `fsync` — the reservation is on disk before the
   * answer (the embedded redis-server runs `appendfsync always`); `memory` — it is in Redis's memory,
   * and a crash of the machine may lose the last second (`appendfsync everysec`). An external Redis
   * keeps its own setting: it is read and reported, never changed. @default "fsync"
   */
  durability?: Durability;
  /**
   * This process sells, settles or records orders: it leases an order-id worker, and every sale is
   * checked against the record before it is sold (at start, after every reconnection, every second)
   * and rebuilt from it when Redis lost it or came back older (sale/recovery/). False for tools that
   * only read (`reconcile` without --repair changes nothing in Redis). @default true
   */
  sells?: boolean;
  logger?: Logger;
}

export type Durability = 'fsync' | 'memory';

/** Everything `serve`, `worker` and `reconcile` run on; closed through the command's Resources. */
export interface Runtime {
  readonly redis: SaleRedis;
  /** The process's sale context on `redis`: built once here, handed to every part of the sale. */
  readonly context: SaleContext;
  readonly db: Database;
  readonly ids: SnowflakeIdGenerator;
  readonly service: SaleService;
  readonly metrics: SaleMetrics;
  /** The pipelines of this thread (none when they run in the order thread). */
  readonly pipelines: OrderPipeline[];
  /** The state of every pipeline of this process, in this thread or the order thread (/healthz). */
  pipelineHealth(): readonly PipelineHealth[];
  readonly logger: Logger;
  readonly embedded: { redis: boolean; database: boolean };
  readonly dataDir: string;
  /** The Redis it runs on (its private redis-server's address in embedded mode). */
  readonly redisUrl: string;
  /** The recovery gate of this process (absent when it does not sell). */
  readonly recovery?: RecoveryMonitor;
  /**
   * Raffle sales with this process's beacon source: one service for its raffle runner and its HTTP
   * API, so an operator's draw gets the round as the runner does (absent when it does not sell).
   */
  readonly raffles?: RaffleService;
  readonly durability: DurabilityReport;
  /** A new link to the embedded store in the order thread (undefined when there is none). */
  openDatabaseLink(): MessagePort | undefined;
  /** Where this process logs its dependencies' outages, one line each way. */
  readonly dependencies: DependencyLog;
}

/**
 * The process's logger: on stdout for `serve` and `worker`; on stderr (fd 2) for tools whose stdout is
 * their report. Pretty on a terminal, JSON lines when piped (LOG_FORMAT overrides; log-format.ts);
 * LOG_LEVEL sets the level.
 */
export function defaultLogger(fd: 1 | 2 = 1): Logger {
  return pino(
    { level: process.env.LOG_LEVEL ?? 'info', redact: ['req.headers.authorization'] },
    logDestination(fd),
  );
}

/**
 * Starts what a command runs on, registering each part in `resources` as soon as it is open, so a
 * failure (or a signal) halfway through closes what was started — never a stray redis-server.
 */
export async function startRuntime(options: RuntimeOptions, resources: Resources): Promise<Runtime> {
  // A URL for another kind of server is said as such, before anything starts (not "cannot reach").
  assertScheme('Redis', options.redisUrl);
  assertScheme('PostgreSQL', options.databaseUrl);
  // First in, closed last: spans of the shutdown are flushed too.
  const role = options.role ?? (options.httpServer === undefined ? 'tool' : 'serve');
  const stopTracing = await startTracing(role);
  if (stopTracing) resources.add('the tracer', stopTracing);
  const logger = options.logger ?? defaultLogger();
  warnTestHooks(logger);
  const dataDir = resolve(options.dataDir ?? '.lockstock');
  const durability = options.durability ?? 'fsync';
  const sells = options.sells ?? true;
  let redisServer: RedisServer | undefined;
  let redisUrl = options.redisUrl;
  if (!redisUrl) {
    const dir = join(dataDir, 'redis');
    mkdirSync(dir, { recursive: true });
    redisServer = await RedisServer.start({
      dir,
      args: ['--appendonly', 'yes', '--appendfsync', durability === 'fsync' ? 'always' : 'everysec'],
      // Out of the terminal's process group: Ctrl-C reaches this process, which stops Redis last,
      // after the HTTP server and the pipelines (in the group, Redis died first, under them).
      ownProcessGroup: true,
    });
    redisUrl = redisServer.url;
    const server = redisServer;
    resources.add('the private redis-server', () => server.stop());
    logger.info({ url: redisUrl, dir }, 'started a private redis-server (set REDIS_URL to use your own)');
  }
  // While Redis is down, a command is retried on 2 reconnections (~150 ms) and then fails: the
  // request answers 503 at once instead of waiting for a Redis that may not come back soon.
  const redis = connectSaleRedis(redisUrl, {
    maxRetriesPerRequest: 2,
    connectTimeout: 5_000,
    commandTimeout: options.redisCommandTimeoutMs ?? 3_000,
  });
  // Until Redis first answers, a connection error is the start failing: said once, in one line.
  // After that, an outage is one line when it starts and one when Redis is back (dependency-log.ts),
  // not one per reconnection attempt.
  const dependencies = new DependencyLog(logger);
  let reached = false;
  let lastError: unknown;
  redis.on('error', (error) => {
    if (reached) dependencies.down('redis', error);
    else lastError = error;
  });
  redis.on('ready', () => dependencies.up('redis'));
  resources.add('the Redis connection', () => redis.quit().catch(() => redis.disconnect()));
  try {
    await redis.ping();
  } catch (error) {
    const code = connectionCode(lastError) ?? connectionCode(error);
    if (code) throw new UnreachableError('Redis', redisUrl, code, HINTS.Redis);
    throw error;
  }
  reached = true;
  const durabilityReport = await readDurability(redis, durability);
  if (!durabilityReport.honoured) {
    logger.warn(
      { ...durabilityReport },
      'durability fsync asked, but Redis does not fsync every write (appendonly yes, appendfsync always): a 202 is in memory only',
    );
  } else if (durability === 'memory') {
    logger.info(
      'durability memory: a 202 is in Redis memory; a crash of the machine can lose the last second of them',
    );
  }

  const pipelineCount = options.pipelines ?? 1;
  const { db, thread, applied } = await openRecord(
    options,
    dataDir,
    redisUrl,
    durability,
    logger,
    resources,
    dependencies,
  ).catch((error: unknown) => {
    const code = options.databaseUrl ? connectionCode(error) : undefined;
    if (code && options.databaseUrl)
      throw new UnreachableError('PostgreSQL', options.databaseUrl, code, HINTS.PostgreSQL);
    throw error;
  });
  if (applied.length > 0) logger.info({ applied }, 'database migrated');
  const recordFsync = await readRecordFsync(db);
  if (recordFsync === 'off' && durability === 'fsync') {
    logger.warn(
      'the record does not sync its commits (fsync or synchronous_commit off): a crash of the machine can lose recorded orders',
    );
  }

  const metrics = createSaleMetrics(
    options.metricsRegistry ?? (thread ? new ThreadedRegistry(() => thread.metrics()) : undefined),
  );
  const context = saleContext(redis);
  // For loops that retry on their own (order ids, pipelines, sweeper, recovery, raffles): a failure
  // because a dependency is down is part of that outage's one line each way, not a line (with a
  // stack) per retry — a Redis outage had the worker write one every 250 ms (issue 47).
  const quiet = dependencies.quiet(logger);
  const ids = new SnowflakeIdGenerator(context, {
    onLeaseLost: (error) =>
      quiet.error({ err: error }, 'snowflake worker id lease lost; orders pause until re-leased'),
  });
  if (sells) {
    // Redis may be gone already at shutdown; the worker id lease then simply expires.
    resources.add('the order id lease', () => ids.stop().catch(() => undefined));
    const workerId = await ids.start();
    logger.info({ workerId }, 'order ids: snowflake worker id leased');
  }
  // Nothing is sold on a Redis that lost a sale or came back older than the record: the monitor
  // checks every open sale at start (rebuilding the ones Redis lost, buyers and keys included), after
  // every reconnection (the id lease first) and every second.
  const recovery = sells
    ? new RecoveryMonitor({
        context,
        db,
        admission: admissionRestore(context, db),
        logger: quiet,
        offerMs: offerMsFromEnv(),
        beforeAdmitting: () => ids.confirm(),
        onRebuilt: (_saleId, cause) => metrics.rebuilds.inc({ cause }),
      })
    : undefined;
  const beacon = sells ? await beaconSetting(logger) : {};
  const service = new SaleService({
    context,
    db,
    nextOrderId: () => ids.next(),
    ...beacon.sales,
    metrics,
    batchWritesPerPhase: options.httpServer ?? false,
    waitlistOfferMs: offerMsFromEnv(),
    ...(recovery ? { gate: recovery } : {}),
  });
  resources.add('the sale service', () => service.close());
  if (recovery) {
    resources.add('the recovery monitor', () => recovery.stop());
    await recovery.start();
  }

  const pipelines = Array.from(
    { length: thread ? 0 : pipelineCount },
    () => new OrderPipeline(context, db, { ...options.pipeline, logger: quiet, metrics }),
  );
  for (const pipeline of pipelines) pipeline.start();
  resources.add('the order pipelines', () => Promise.all(pipelines.map((p) => p.stop())));
  if (pipelines.length > 0) {
    // Unpaid orders expire wherever orders are recorded; any number of sweepers may run.
    const sweeper = new ExpirySweeper(context, {
      logger: quiet,
      layouts: service.layouts,
      offerMs: offerMsFromEnv(),
      onTransfersFinished: (count) => metrics.transfersFinished.inc(count),
      onOffersLapsed: (count) => metrics.offersLapsed.inc(count),
      ...(recovery ? { admits: (saleId: string) => recovery.admits(saleId) } : {}),
    });
    sweeper.start();
    resources.add('the expiry sweeper', () => sweeper.stop());
  }
  let raffles: RaffleService | undefined;
  if (sells) {
    // Raffle sales: entries recorded, draws run once, winners and waitlists served; every serve
    // process runs one (each step is safe to race: raffle/runner.ts).
    raffles = new RaffleService({ context, db, nextOrderId: () => ids.next(), ...beacon.raffles });
    const runner = new RaffleRunner(raffles, db, {
      logger: quiet,
      ...(recovery ? { admits: (saleId: string) => recovery.admits(saleId) } : {}),
    });
    runner.start();
    resources.add('the raffle runner', () => runner.stop());
  }

  const pipelineHealth = () => [...pipelines.map((p) => p.health), ...(thread?.pipelines() ?? [])];
  registerProcessMetrics(metrics.registry, role, pipelineHealth);

  return {
    redis,
    context,
    db,
    ids,
    service,
    metrics,
    pipelines,
    pipelineHealth,
    logger,
    dependencies,
    dataDir,
    redisUrl,
    embedded: { redis: redisServer !== undefined, database: !options.databaseUrl },
    openDatabaseLink: () => thread?.openDatabaseLink(),
    ...(recovery ? { recovery } : {}),
    ...(raffles ? { raffles } : {}),
    durability: { ...durabilityReport, recordFsync },
  };
}

/**
 * Opens the order record: PostgreSQL at DATABASE_URL or the embedded PGlite under `dataDir`, in the
 * order thread when asked (with the pipelines), migrated. Each part is registered in `resources` as
 * soon as it is open.
 */
async function openRecord(
  options: RuntimeOptions,
  dataDir: string,
  redisUrl: string,
  durability: Durability,
  logger: Logger,
  resources: Resources,
  dependencies: DependencyLog,
): Promise<{ db: Database; thread: OrderThread | undefined; applied: readonly string[] }> {
  if (options.record) return { db: options.record, thread: undefined, applied: [] };
  const pgliteDir = join(dataDir, 'pgdata');
  if (!options.databaseUrl) mkdirSync(dataDir, { recursive: true });
  const pipelineCount = options.pipelines ?? 1;
  // In the order thread: the embedded store and whatever records orders (pipelines, sweeper).
  const thread =
    options.orderThread && (!options.databaseUrl || pipelineCount > 0)
      ? await startOrderThread(
          {
            redisUrl,
            ...(options.databaseUrl
              ? { databaseUrl: options.databaseUrl }
              : { pgliteDir, pgliteFsync: durability === 'fsync' }),
            pipelines: pipelineCount,
            // PGlite (WASM) pays more per statement than a server: larger batches, fewer of them.
            pipeline: { ...(options.databaseUrl ? {} : { batchSize: 2000 }), ...options.pipeline },
            logLevel: logger.level,
          },
          logger,
        )
      : undefined;
  if (thread) resources.add('the order thread', () => thread.stop());

  let db: Database;
  if (options.databaseUrl) {
    db = postgresDatabase(options.databaseUrl, {
      max: 10,
      onConnectionError: (error) => dependencies.down('database', error),
      onConnect: () => dependencies.up('database'),
    });
  } else {
    db = thread?.db ?? (await pgliteDatabase(pgliteDir, { fsync: durability === 'fsync' }));
    logger.info(
      { dir: pgliteDir, thread: thread !== undefined, fsync: durability === 'fsync' },
      'order store: embedded PostgreSQL (PGlite); set DATABASE_URL to use a server',
    );
  }
  resources.add('the order store', () => db.close());
  const applied = thread ? thread.applied : await migrate(db);
  return { db, thread, applied };
}
