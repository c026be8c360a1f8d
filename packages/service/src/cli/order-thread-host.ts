import { once } from 'node:events';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { AggregatorRegistry, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Logger } from 'pino';
import type { OrderPipelineOptions, PipelineHealth } from '../sale/pipeline/order-pipeline.js';
import type { Database } from '../sale/store/db.js';
import { remoteDatabase } from '../sale/store/remote-db.js';

/** What the order thread is started with (structured-cloned; the port is transferred). */
export interface OrderThreadData {
  redisUrl: string;
  /** A PostgreSQL server; without it the thread owns PGlite in `pgliteDir` and serves it on `dbPort`. */
  databaseUrl?: string;
  pgliteDir?: string;
  /** Sync PGlite's commits to the disk (`--durability fsync`; see pglite-fsync.ts). */
  pgliteFsync?: boolean;
  dbPort?: MessagePort;
  pipelines: number;
  pipeline: Omit<OrderPipelineOptions, 'logger' | 'metrics' | 'faults'>;
  logLevel: string;
}

type Metrics = Array<MetricObjectWithValues<MetricValue<string>>>;

export type HostMessage =
  | { kind: 'metrics'; id: number }
  | { kind: 'stop' }
  /** Serve the embedded store on one more port (one per HTTP process of `serve --processes N`). */
  | { kind: 'serve-db'; port: MessagePort };
export type ThreadMessage =
  | { kind: 'ready'; applied: string[]; consumers: string[] }
  | { kind: 'failed'; message: string }
  | { kind: 'metrics'; id: number; values: Metrics }
  | { kind: 'health'; pipelines: PipelineHealth[] }
  | { kind: 'stopped' };

export interface OrderThread {
  /** The embedded order store, served from the thread (undefined with a PostgreSQL server). */
  readonly db: Database | undefined;
  /** Migrations the thread applied at start. */
  readonly applied: string[];
  /** The thread's metrics (pipelines), to merge into the process's /metrics. */
  metrics(): Promise<Metrics>;
  /**
   * The thread's pipelines as last reported (the thread sends their state every 500 ms and on every
   * change of it), for /healthz: a pipeline whose database is down shows as `retrying`.
   */
  pipelines(): readonly PipelineHealth[];
  /**
   * A new link to the embedded store (undefined with a PostgreSQL server): `serve --processes N`
   * relays one to each HTTP process. Closing it rolls back what it left open.
   */
  openDatabaseLink(): MessagePort | undefined;
  /** Stops the pipelines and the sweeper after their current batch, closes the store, ends the thread. */
  stop(): Promise<void>;
}

/** How long stop() waits for the thread to finish its batch and close before terminating it. */
const STOP_TIMEOUT_MS = 10_000;

/**
 * Starts the order thread (order-thread.ts) and waits until its store is migrated and its pipelines
 * run. `serve` records orders there so that PGlite's WASM and the pipeline's batches never hold up an
 * HTTP response; the HTTP side reaches the embedded store through a MessagePort.
 */
export async function startOrderThread(
  data: Omit<OrderThreadData, 'dbPort'>,
  logger: Logger,
): Promise<OrderThread> {
  const channel = data.databaseUrl ? undefined : new MessageChannel();
  const worker = new Worker(new URL('./order-thread.js', import.meta.url), {
    workerData: { ...data, ...(channel ? { dbPort: channel.port2 } : {}) },
    transferList: channel ? [channel.port2] : [],
  });
  const pending = new Map<number, (values: Metrics) => void>();
  let nextId = 1;
  let stopped: Promise<void> | undefined;
  let pipelines: readonly PipelineHealth[] = [];
  worker.on('error', (error) => logger.error({ err: error }, 'the order thread failed'));
  const ready = new Promise<{ applied: string[] }>((resolve, reject) => {
    worker.on('message', (message: ThreadMessage) => {
      if (message.kind === 'ready') resolve(message);
      else if (message.kind === 'failed') reject(new Error(message.message));
      else if (message.kind === 'health') pipelines = message.pipelines;
      else if (message.kind === 'metrics') {
        pending.get(message.id)?.(message.values);
        pending.delete(message.id);
      }
    });
    worker.once('exit', (code) => reject(new Error(`the order thread exited with ${code}`)));
  });
  const { applied } = await ready.catch(async (error: unknown) => {
    channel?.port1.close();
    await worker.terminate();
    throw error;
  });
  worker.on('exit', (code) => {
    if (!stopped) logger.error({ code }, 'the order thread exited; orders are not recorded by this process');
    for (const resolve of pending.values()) resolve([]);
    pending.clear();
  });
  return {
    db: channel ? remoteDatabase(channel.port1, 'pglite') : undefined,
    applied,
    pipelines: () => pipelines,
    openDatabaseLink: () => {
      if (!channel || stopped) return undefined;
      const link = new MessageChannel();
      worker.postMessage({ kind: 'serve-db', port: link.port2 } satisfies HostMessage, [link.port2]);
      return link.port1;
    },
    metrics: () =>
      new Promise((resolve) => {
        if (stopped || worker.threadId < 0) return resolve([]);
        const id = nextId++;
        pending.set(id, resolve);
        worker.postMessage({ kind: 'metrics', id } satisfies HostMessage);
      }),
    stop: () =>
      (stopped ??= (async () => {
        const exited = once(worker, 'exit');
        worker.postMessage({ kind: 'stop' } satisfies HostMessage);
        const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
        channel?.port1.close();
      })()),
  };
}

/**
 * A registry whose text output (GET /metrics) adds the order thread's metrics to this thread's: the
 * same metric names, summed (prom-client's AggregatorRegistry, made for cluster workers).
 */
export class ThreadedRegistry extends Registry {
  constructor(private readonly thread: () => Promise<Metrics>) {
    super();
  }

  /** The order thread's metrics alone. */
  threadMetrics(): Promise<Metrics> {
    return this.thread();
  }

  override async metrics(): Promise<string> {
    const [own, theirs] = await Promise.all([this.getMetricsAsJSON(), this.thread()]);
    return AggregatorRegistry.aggregate([own, theirs] as Metrics[]).metrics();
  }
}
