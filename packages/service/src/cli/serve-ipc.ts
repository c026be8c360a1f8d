/**
 * What the processes of `serve --processes N` say to each other over Node's cluster IPC channel
 * (structured clone: `serialization: 'advanced'`, so the record's Dates and bigints cross intact).
 * The primary owns the data (the embedded redis-server, the order thread with its store, pipelines
 * and sweeper); each HTTP process answers buyers and reaches the embedded store through the primary.
 */
import { EventEmitter } from 'node:events';
import { Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { PipelineHealth } from '../sale/pipeline/order-pipeline.js';

export type Metrics = Array<MetricObjectWithValues<MetricValue<string>>>;

/** Set in an HTTP process's environment by the primary (cluster.fork). */
export const HTTP_PROCESS_ENV = {
  role: 'LOCKSTOCK_SERVE_ROLE',
  redisUrl: 'LOCKSTOCK_SERVE_REDIS_URL',
  /** '1' when the record is the primary's embedded store (reached over IPC). */
  embeddedRecord: 'LOCKSTOCK_SERVE_EMBEDDED_RECORD',
  /** '1' when Redis and the record are both embedded (the demo buyers are on). */
  embedded: 'LOCKSTOCK_SERVE_EMBEDDED',
} as const;

/** Primary → HTTP process. */
export type PrimaryMessage =
  | { lockstock: 'db'; message: unknown }
  | { lockstock: 'metrics-request'; id: number }
  | { lockstock: 'cluster-metrics'; id: number; text: string }
  | { lockstock: 'health'; pipelines: PipelineHealth[] };

/** HTTP process → primary. */
export type HttpProcessMessage =
  | { lockstock: 'db'; message: unknown }
  | { lockstock: 'listening'; address: string }
  | { lockstock: 'failed'; message: string }
  | { lockstock: 'metrics'; id: number; values: Metrics }
  | { lockstock: 'cluster-metrics-request'; id: number };

export function isLockstockMessage(message: unknown): message is { lockstock: string } {
  return typeof message === 'object' && message !== null && 'lockstock' in message;
}

/** Sends to the primary; a no-op once the channel is gone (the primary ended: this process is ending too). */
export function sendToPrimary(message: HttpProcessMessage): void {
  if (!process.connected) return;
  try {
    process.send?.(message);
  } catch (error) {
    // Only a message that cannot be cloned gets here (a defect): reported, never fatal to serving.
    process.stderr.write(`could not message the primary: ${String(error)}\n`);
  }
}

/**
 * The HTTP process's end of its link to the embedded store, shaped like a MessagePort for
 * remoteDatabase: the primary relays it to the order thread. Closes when the channel does.
 */
export class ProcessLink extends EventEmitter {
  private readonly onMessage = (message: unknown) => {
    if (!isLockstockMessage(message)) return;
    const m = message as PrimaryMessage;
    if (m.lockstock === 'db') this.emit('message', m.message);
  };
  private readonly onDisconnect = () => this.close();
  private closed = false;

  constructor() {
    super();
    process.on('message', this.onMessage);
    process.once('disconnect', this.onDisconnect);
  }

  postMessage(message: unknown): void {
    if (!this.closed) sendToPrimary({ lockstock: 'db', message });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    process.off('message', this.onMessage);
    process.off('disconnect', this.onDisconnect);
    this.emit('close');
  }
}

/** How long an HTTP process waits for the primary's whole-service metrics before answering its own. */
const CLUSTER_METRICS_TIMEOUT_MS = 5_000;

/**
 * An HTTP process's registry: GET /metrics answers for the whole service (every HTTP process, the
 * primary and its order thread, summed by the primary), as one scrape target should. The primary
 * reads this process's own metrics with getMetricsAsJSON (not overridden).
 */
export class ClusterRegistry extends Registry {
  private nextId = 1;
  private readonly pending = new Map<number, (text: string | undefined) => void>();

  constructor() {
    super();
    process.on('message', (message: unknown) => {
      if (!isLockstockMessage(message)) return;
      const m = message as PrimaryMessage;
      if (m.lockstock === 'cluster-metrics') {
        this.pending.get(m.id)?.(m.text);
        this.pending.delete(m.id);
      } else if (m.lockstock === 'metrics-request') {
        // Through JSON, as prom-client's own cluster aggregation does: a metric object may carry
        // functions (a collect callback), which cannot be cloned.
        void this.getMetricsAsJSON().then((values) =>
          sendToPrimary({
            lockstock: 'metrics',
            id: m.id,
            values: JSON.parse(JSON.stringify(values)) as Metrics,
          }),
        );
      }
    });
  }

  override async metrics(): Promise<string> {
    const id = this.nextId++;
    const text = await new Promise<string | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), CLUSTER_METRICS_TIMEOUT_MS);
      this.pending.set(id, (value) => {
        clearTimeout(timer);
        resolve(value);
      });
      if (process.connected) sendToPrimary({ lockstock: 'cluster-metrics-request', id });
      else resolve(undefined);
    });
    this.pending.delete(id);
    // The primary is gone or busy: this process's own figures rather than none.
    return text ?? super.metrics();
  }
}
