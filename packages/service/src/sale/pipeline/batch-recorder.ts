import { tracingOn } from '../../support/tracing.js';
import type { Logger } from '../logger.js';
import type { SaleMetrics } from '../metrics.js';
import type { SaleRedis } from '../redis.js';
import { applyOrders } from '../store/apply-orders.js';
import type { Database } from '../store/db.js';
import type { Decision, StreamEntry } from '../store/decide.js';
import { FencedOutError } from '../store/fenced-out.js';
import type { Acknowledger } from './acknowledge.js';
import { FencedOutStep, isTransient } from './errors.js';
import { awaitEarlierEntries, EarlierEntriesPending, streamWithEarlierPending } from './stream-order.js';
import type { StreamReader } from './stream-reader.js';
import type { ReadEntry } from './stream.js';
import { traceRecorded } from './trace-records.js';

/** How long a batch waits in hand for the entries before it to be recorded (stream-order.ts). */
const EARLIER_WAIT_MS = 1000;

/** The entries read together (`rescue`: read ahead of a batch that failed; see settleReadAhead). */
interface Batch {
  readonly batch: readonly ReadEntry[];
  readonly rescue: boolean;
}

export interface Processed {
  decisions: Decision[];
  acked: number;
}

export interface BatchRecorderOptions {
  /** Deliveries after which an entry that keeps failing is dead-lettered. */
  readonly maxDeliveries: number;
  readonly logger: Logger;
  readonly metrics?: SaleMetrics | undefined;
  /** Test hooks around the commit (fault injection). */
  readonly faults?: { beforeCommit?: () => Promise<void>; afterCommit?: () => Promise<void> } | undefined;
  /** The recording pipeline and its step's fence, checked by applyOrders against a rebuild's. */
  readonly leaseOfStep: () => { consumer: string; stepFence: number };
  /** Recording made progress (lease.ts). */
  readonly onRecorded: () => void;
  /** A batch failed: what this consumer holds pending must be read again before new entries. */
  readonly onBatchFailed: () => void;
}

/**
 * Records a batch of stream entries in the database and has them acknowledged: the decisions are
 * the record's (store/apply-orders.ts), taken in stream order (stream-order.ts); a batch the database
 * refuses is retried entry by entry, and an entry that keeps failing is dead-lettered.
 */
export class BatchRecorder {
  constructor(
    private readonly redis: SaleRedis,
    private readonly db: Database,
    private readonly reader: StreamReader,
    private readonly acknowledger: Acknowledger,
    private readonly options: BatchRecorderOptions,
  ) {}

  /**
   * Records entries and acknowledges them. `fresh`: first deliveries (read with '>'), which no one can
   * have recorded yet, so the inbox lookup is skipped for them (the inbox's unique constraint still
   * refuses a second row); redelivered and claimed entries are always looked up.
   */
  async process(entries: ReadEntry[], { fresh = false, rescue = false } = {}): Promise<Processed> {
    if (entries.length === 0) return { decisions: [], acked: 0 };
    const orders: StreamEntry[] = [];
    const byOrder = new Map<StreamEntry, ReadEntry>();
    for (const entry of entries) {
      const order = this.acknowledger.parse(entry);
      if (order) {
        orders.push(order);
        byOrder.set(order, entry);
      } else {
        await this.acknowledger.deadLetter(
          entry,
          'malformed',
          'the entry is neither a reservation nor an order event',
        );
      }
    }
    const stopTimer = this.options.metrics?.batchSeconds.startTimer();
    const startedAt = Date.now();
    let decisions: Decision[];
    try {
      decisions = await this.record(orders, byOrder, fresh, { batch: entries, rescue });
    } catch (error) {
      if (error instanceof FencedOutError) throw new FencedOutStep(entries, error);
      throw error;
    }
    stopTimer?.();
    this.options.onRecorded();
    if (tracingOn()) traceRecorded(decisions, byOrder, startedAt, orders.length);
    await this.acknowledger.acknowledge(decisions, byOrder);
    return { decisions, acked: decisions.length };
  }

  private async record(
    orders: StreamEntry[],
    byOrder: Map<StreamEntry, ReadEntry>,
    fresh: boolean,
    batch: Batch,
  ): Promise<Decision[]> {
    try {
      return await this.applyWithFaults(orders, fresh, batch);
    } catch (error) {
      this.options.onBatchFailed();
      if (error instanceof EarlierEntriesPending) throw error;
      if (isTransient(error)) throw error; // nothing acknowledged; the step retries after a pause
      this.options.metrics?.pipelineErrors.inc({ kind: 'permanent' });
      this.options.logger.warn(
        { err: error, count: orders.length },
        'batch refused by the database; retrying entries one by one',
      );
      return this.applyOneByOne(orders, byOrder, batch);
    }
  }

  /**
   * Stream order (stream-order.ts): waits in hand for the entries before the batch, then checks again
   * under the sales' row locks, where it counts. Entries of the batch itself are pending too; they are
   * after the batch's first entry of their stream, so they do not count. A rescue (settleReadAhead)
   * that cannot reach Redis records the batch as it is.
   */
  private inStreamOrder({ batch, rescue }: Batch) {
    const unreachable = (error: unknown) => {
      if (rescue && !(error instanceof EarlierEntriesPending)) return;
      throw error;
    };
    return {
      awaitEarlier: () => awaitEarlierEntries(this.redis, batch, EARLIER_WAIT_MS).catch(unreachable),
      afterLocking: async () => {
        const stream = await streamWithEarlierPending(this.redis, batch).catch(unreachable);
        if (stream !== undefined) throw new EarlierEntriesPending(stream);
      },
    };
  }

  private async applyWithFaults(orders: StreamEntry[], fresh: boolean, batch: Batch): Promise<Decision[]> {
    if (orders.length === 0) return [];
    const order = this.inStreamOrder(batch);
    await order.awaitEarlier();
    await this.options.faults?.beforeCommit?.();
    const decisions = await applyOrders(this.db, orders, {
      fresh,
      lease: this.options.leaseOfStep(),
      afterLocking: order.afterLocking,
    });
    await this.options.faults?.afterCommit?.();
    return decisions;
  }

  /** After a permanent batch error: each entry alone; one that still fails is retried or dead-lettered. */
  private async applyOneByOne(
    orders: StreamEntry[],
    byOrder: Map<StreamEntry, ReadEntry>,
    batch: Batch,
  ): Promise<Decision[]> {
    const decisions: Decision[] = [];
    // The batch's entries are decided in its order: only entries before the whole batch are waited for.
    const { afterLocking } = this.inStreamOrder(batch);
    for (const order of orders) {
      try {
        const lease = this.options.leaseOfStep();
        decisions.push(...(await applyOrders(this.db, [order], { lease, afterLocking })));
      } catch (error) {
        if (error instanceof EarlierEntriesPending || isTransient(error)) throw error;
        const entry = byOrder.get(order) as ReadEntry;
        const deliveries = await this.reader.deliveries(entry);
        if (deliveries >= this.options.maxDeliveries) {
          const detail = `refused ${deliveries} times: ${(error as Error).message}`;
          await this.acknowledger.deadLetter(entry, 'failing', detail);
        } else {
          this.options.logger.warn(
            { err: error, stream: entry.stream, id: entry.id, deliveries },
            'order entry refused; will retry',
          );
        }
      }
    }
    return decisions;
  }
}
