/**
 * `serve --processes N` (N > 1): this process is the primary. It owns the data — the data directory
 * claim, the embedded redis-server, the order thread with the embedded store, the pipelines and the
 * expiry sweeper — and forks N HTTP processes (Node's cluster) that share the port and answer buyers.
 * A buyer's purchase is one script call to Redis from whichever HTTP process accepted it; the record
 * is written here. The primary relays each HTTP process's link to the embedded store (the HTTP
 * processes cannot open PGlite: its data directory has one owner), sums their metrics for
 * GET /metrics, tells them the pipelines' health for /healthz, and replaces one that dies.
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { MessagePort } from 'node:worker_threads';
import type { Resources } from './lifecycle.js';
import { ThreadedRegistry } from './order-thread-host.js';
import { jwtSecret } from './jwt-secret.js';
import { startRuntime, type Runtime } from './runtime.js';
import {
  announce,
  assertCanListen,
  claimDataDir,
  runtimeOptions,
  type ServeOptions,
  gaugeReadingsToLog,
} from './serve-common.js';
import {
  HTTP_PROCESS_ENV,
  isLockstockMessage,
  type HttpProcessMessage,
  type Metrics,
  type PrimaryMessage,
} from './serve-ipc.js';
import { registerSaleGauges } from '../sale/gauges.js';
import { SERVICE_INSTANCE_ID } from './tracing.js';

/** How long stopping waits for an HTTP process to close (its in-flight requests) before SIGKILL. */
const STOP_TIMEOUT_MS = 12_000;
/** How long the primary waits for an HTTP process's metrics before summing without them. */
const METRICS_TIMEOUT_MS = 2_000;
/** A replacement for an HTTP process that died is forked after this, ms (no tight crash loop). */
const RESPAWN_DELAY_MS = 1_000;

export async function servePrimary(resources: Resources, options: ServeOptions): Promise<'serving'> {
  const claim = claimDataDir(options);
  if (claim) resources.add('the data directory', () => claim.release());
  await assertCanListen(options);
  const runtime = await startRuntime(runtimeOptions(options, { httpServer: false }), resources);
  // The per-sale gauges are read here only (the process that owns the data), in the background.
  const gauges = registerSaleGauges(runtime.metrics.registry, {
    context: runtime.context,
    db: runtime.db,
    layouts: runtime.service.layouts,
    // One serve of those sharing the Redis exposes the per-sale series (the lease holder).
    readerId: SERVICE_INSTANCE_ID,
    onReading: gaugeReadingsToLog(runtime),
  });
  resources.add('the sale gauges', () => gauges.stop());
  const secret = jwtSecret(options.dataDir);
  const processes = new HttpProcesses(runtime);
  resources.add('the HTTP processes', () => processes.stop());
  const address = await processes.start(options.processes);
  claim?.update({ redisUrl: runtime.redisUrl, httpUrl: address });
  runtime.logger.info({ address, processes: options.processes }, 'HTTP processes are listening');
  await announce(runtime, address, secret);
  return 'serving';
}

class HttpProcesses {
  private readonly workers = new Set<Worker>();
  private readonly links = new Map<Worker, MessagePort>();
  private readonly metricsWaiting = new Map<string, (values: Metrics) => void>();
  private nextMetricsId = 1;
  private stopping = false;
  private health: NodeJS.Timeout | undefined;

  constructor(private readonly runtime: Runtime) {}

  /** Forks `count` HTTP processes; resolves with their address once all listen, or rejects on the first failure. */
  async start(count: number): Promise<string> {
    // Structured clone on the IPC channel: the record's Dates and bigints cross as they are.
    cluster.setupPrimary({ serialization: 'advanced' });
    // A Ctrl-C reaches the whole process group: the HTTP processes end on it by themselves, and
    // that is stopping, not dying.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => (this.stopping = true));
    const addresses = await Promise.all(Array.from({ length: count }, () => this.fork()));
    // /healthz in every HTTP process shows the pipelines, which run here.
    this.health = setInterval(() => this.broadcast(), 500);
    this.health.unref();
    this.broadcast();
    return addresses[0] as string;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.health);
    await Promise.all(
      [...this.workers].map(async (worker) => {
        if (worker.isDead()) return;
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.process.kill('SIGTERM');
        const timer = setTimeout(() => worker.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  private fork(): Promise<string> {
    const embedded = this.runtime.embedded;
    const worker = cluster.fork({
      [HTTP_PROCESS_ENV.role]: 'http',
      [HTTP_PROCESS_ENV.redisUrl]: this.runtime.redisUrl,
      [HTTP_PROCESS_ENV.embeddedRecord]: embedded.database ? '1' : '0',
      [HTTP_PROCESS_ENV.embedded]: embedded.redis && embedded.database ? '1' : '0',
    });
    this.workers.add(worker);
    // A channel error (EPIPE: a message to a process that just ended) is not the primary's end; the
    // process's exit is handled below.
    worker.on('error', (error) => this.runtime.logger.debug({ err: error }, 'HTTP process channel error'));
    const link = embedded.database ? this.runtime.openDatabaseLink() : undefined;
    if (link) {
      this.links.set(worker, link);
      link.on('message', (message: unknown) => this.send(worker, { lockstock: 'db', message }));
    }
    return new Promise((resolve, reject) => {
      let listening = false;
      worker.on('message', (message: unknown) => {
        if (!isLockstockMessage(message)) return;
        const m = message as HttpProcessMessage;
        if (m.lockstock === 'db') link?.postMessage(m.message);
        else if (m.lockstock === 'listening') {
          listening = true;
          resolve(m.address);
        } else if (m.lockstock === 'failed') reject(new Error(m.message));
        else if (m.lockstock === 'metrics') {
          this.metricsWaiting.get(`${worker.id}:${m.id}`)?.(m.values);
        } else if (m.lockstock === 'cluster-metrics-request') {
          void this.collectMetrics().then((text) =>
            this.send(worker, { lockstock: 'cluster-metrics', id: m.id, text }),
          );
        }
      });
      worker.once('exit', (code, signal) => {
        this.workers.delete(worker);
        // The store's end of the link closes too: what this process left open is rolled back.
        link?.close();
        this.links.delete(worker);
        if (!listening) {
          reject(new Error(`an HTTP process exited before listening (${signal ?? `code ${code}`})`));
          return;
        }
        if (this.stopping) return;
        this.runtime.logger.error(
          { pid: worker.process.pid, code, signal },
          'an HTTP process died; starting another',
        );
        setTimeout(() => {
          if (!this.stopping)
            this.fork().catch((error: unknown) =>
              this.runtime.logger.error({ err: error }, 'could not replace an HTTP process'),
            );
        }, RESPAWN_DELAY_MS).unref();
      });
    });
  }

  private send(worker: Worker, message: PrimaryMessage): void {
    if (!worker.isConnected()) return;
    try {
      worker.send(message);
    } catch (error) {
      this.runtime.logger.error({ err: error }, 'could not message an HTTP process');
    }
  }

  private broadcast(): void {
    const pipelines = [...this.runtime.pipelineHealth()];
    for (const worker of this.workers) this.send(worker, { lockstock: 'health', pipelines });
  }

  /** The whole service's metrics: every HTTP process's own, this process's and its order thread's, summed. */
  private async collectMetrics(): Promise<string> {
    const fromWorkers = [...this.workers].map(
      (worker) =>
        new Promise<Metrics>((resolve) => {
          const id = this.nextMetricsId++;
          const key = `${worker.id}:${id}`;
          const timer = setTimeout(() => done([]), METRICS_TIMEOUT_MS);
          const done = (values: Metrics) => {
            clearTimeout(timer);
            this.metricsWaiting.delete(key);
            resolve(values);
          };
          this.metricsWaiting.set(key, done);
          this.send(worker, { lockstock: 'metrics-request', id });
        }),
    );
    const own = this.runtime.metrics.registry;
    const sets = await Promise.all([own.getMetricsAsJSON() as Promise<Metrics>, ...fromWorkers]);
    return AggregatorRegistry.aggregate([...sets, await this.threadMetrics()]).metrics();
  }

  private threadMetrics(): Promise<Metrics> {
    const { registry } = this.runtime.metrics;
    return registry instanceof ThreadedRegistry ? registry.threadMetrics() : Promise.resolve([]);
  }
}
