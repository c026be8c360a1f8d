/**
 * The order thread (a worker thread of `serve`): the order store when it is embedded (PGlite), the
 * order pipelines and the expiry sweeper — everything that records orders, off the HTTP event loop.
 * Started and stopped by order-thread-host.ts; messages in both directions are typed there.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { startTracing } from './tracing.js';
import { saleContext } from '../sale/context/context.js';
import { connectSaleRedis } from '../sale/redis.js';
import pino from 'pino';
import { ExpirySweeper } from '../sale/lifecycle/sweeper.js';
import { offerMsFromEnv } from '../sale/waitlist/settings.js';
import { recordLayouts } from '../sale/shards/record-layouts.js';
import { createSaleMetrics } from '../sale/metrics.js';
import { registerSpanDrops } from './process-metrics.js';
import { OrderPipeline } from '../sale/pipeline/order-pipeline.js';
import { pgliteDatabase, postgresDatabase, type Database } from '../sale/store/db.js';
import { migrate } from '../sale/store/migrate.js';
import { serveDatabase } from '../sale/store/remote-db.js';
import { RecoveryMonitor } from '../sale/recovery/monitor.js';
import { admissionRestore } from '../sale/admission/restore.js';
import type { HostMessage, OrderThreadData, ThreadMessage } from './order-thread-host.js';
import { lowerThisThreadPriority } from './thread-priority.js';
import { logDestination } from './log-format.js';
import { DependencyLog } from '../http/dependency-log.js';

const data = workerData as OrderThreadData;
const port = parentPort as MessagePort;
const post = (message: ThreadMessage) => port.postMessage(message);
// Same format as the process's own logs (a terminal is tested on fd 1, which this thread shares).
const logger = pino({ level: data.logLevel, redact: ['req.headers.authorization'] }, logDestination(1)).child(
  { thread: 'orders' },
);
// This thread's outages, one line each way (as the process's own: dependency-log.ts); its loops
// that retry on their own log through `quiet`, never a line per retry.
const dependencies = new DependencyLog(logger);
const quiet = dependencies.quiet(logger);

async function start() {
  // Buyers first: recording yields the CPU to the HTTP thread (and Redis) when every core is busy.
  if (!lowerThisThreadPriority()) logger.debug('order thread: runs at the process priority');
  // A thread has its own OpenTelemetry globals: the pipelines' recording spans need a provider here.
  const stopTracing = await startTracing('orders');
  const db: Database = data.databaseUrl
    ? postgresDatabase(data.databaseUrl, {
        max: Math.max(2, data.pipelines + 1),
        onConnectionError: (error) => dependencies.down('database', error),
        onConnect: () => dependencies.up('database'),
      })
    : await pgliteDatabase(data.pgliteDir, { fsync: data.pgliteFsync === true });
  const closers: Array<() => Promise<unknown>> = [() => db.close()];
  if (stopTracing) closers.push(stopTracing);
  try {
    const applied = await migrate(db);
    const stopServing = data.dbPort ? serveDatabase(data.dbPort, db) : undefined;
    // Links of the HTTP processes of `serve --processes N` (relayed by the primary): each served
    // until it closes (its process ended: its open transactions are rolled back) or the thread stops.
    const links = new Set<MessagePort>();
    const serveLink = (link: MessagePort) => {
      const stop = serveDatabase(link, db);
      links.add(link);
      link.on('close', () => {
        stop();
        links.delete(link);
      });
    };
    closers.unshift(async () => {
      for (const link of links) link.close();
    });
    const redis = connectSaleRedis(data.redisUrl, { maxRetriesPerRequest: 2, connectTimeout: 5_000 });
    redis.on('error', (error) => dependencies.down('redis', error));
    redis.on('ready', () => dependencies.up('redis'));
    closers.unshift(() => redis.quit().catch(() => redis.disconnect()));
    // This thread's sale context: its own connection, keys, scripts (context/context.ts).
    const context = saleContext(redis);
    const metrics = createSaleMetrics();
    registerSpanDrops(metrics.registry);
    const pipelines = Array.from(
      { length: data.pipelines },
      () => new OrderPipeline(context, db, { ...data.pipeline, logger: quiet, metrics }),
    );
    // The sweeper expires orders on this thread's own connection: it waits, as the HTTP thread's
    // purchases do, until that connection has seen every sale checked against the record (a Redis
    // that came back older would otherwise expire orders the record already holds as paid).
    const recovery =
      data.pipelines > 0
        ? new RecoveryMonitor({
            context,
            db,
            admission: admissionRestore(context, db),
            logger: quiet,
            offerMs: offerMsFromEnv(),
          })
        : undefined;
    await recovery?.start();
    const sweeper = recovery
      ? new ExpirySweeper(context, {
          logger: quiet,
          admits: (saleId) => recovery.admits(saleId),
          layouts: recordLayouts(context, db),
          offerMs: offerMsFromEnv(),
          onTransfersFinished: (count) => metrics.transfersFinished.inc(count),
          onOffersLapsed: (count) => metrics.offersLapsed.inc(count),
        })
      : undefined;
    for (const pipeline of pipelines) pipeline.start();
    sweeper?.start();
    closers.unshift(async () => {
      stopServing?.();
      await Promise.all([...pipelines.map((p) => p.stop()), sweeper?.stop()]);
      await recovery?.stop();
    });
    // The HTTP thread's /healthz reads the pipelines' state from these reports (it cannot ask
    // synchronously): sent every 500 ms, so a failing pipeline shows within that.
    const report = setInterval(
      () => post({ kind: 'health', pipelines: pipelines.map((p) => p.health) }),
      500,
    );
    report.unref();
    closers.unshift(async () => clearInterval(report));
    return { applied, metrics, consumers: pipelines.map((p) => p.consumer), closers, serveLink };
  } catch (error) {
    for (const close of closers) await close().catch(() => undefined);
    throw error;
  }
}

try {
  const { applied, metrics, consumers, closers, serveLink } = await start();
  port.on('message', (message: HostMessage) => {
    if (message.kind === 'metrics') {
      void metrics.registry
        .getMetricsAsJSON()
        .then((values) => post({ kind: 'metrics', id: message.id, values }));
    } else if (message.kind === 'serve-db') {
      if (data.dbPort) serveLink(message.port);
      else message.port.close();
    } else if (message.kind === 'stop') {
      void (async () => {
        for (const close of closers) {
          await close().catch((error: unknown) =>
            logger.error({ err: error }, 'order thread: could not close'),
          );
        }
        post({ kind: 'stopped' });
        port.close();
      })();
    }
  });
  post({ kind: 'ready', applied, consumers });
} catch (error) {
  post({ kind: 'failed', message: error instanceof Error ? error.message : String(error) });
  port.close();
}
