import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { silentLogger, type Logger } from '../logger.js';
import type { SaleMetrics } from '../metrics.js';
import type { SaleContext } from '../context/context.js';
import { recordLayouts } from '../shards/record-layouts.js';
import type { Database } from '../store/db.js';
import { Acknowledger } from './acknowledge.js';
import { BatchRecorder } from './batch-recorder.js';
import { FencedOutStep, isTransient } from './errors.js';
import { PipelineLease } from './lease.js';
import { EarlierEntriesPending } from './stream-order.js';
import { StreamReader } from './stream-reader.js';
import type { ReadEntry } from './stream.js';

export interface OrderPipelineOptions {
  /** This consumer's name in the group. @default "<host>-<pid>-<random>" */
  consumer?: string;
  /** Entries per database transaction (fewer, larger transactions cost less per order). @default 1000 */
  batchSize?: number;
  /** How long one read waits for new entries, ms. @default 1000 */
  blockMs?: number;
  /** Entries pending this long with another consumer are taken over (it is presumed dead), ms. @default 10000 */
  claimIdleMs?: number;
  /** Deliveries after which an entry that keeps failing is dead-lettered. @default 5 */
  maxDeliveries?: number;
  /** How often acknowledged entries are trimmed from the streams, ms. @default 5000 */
  trimEveryMs?: number;
  /**
   * The lease a rebuild waits on (pipeline/lease.ts): renewed while the pipeline makes progress; a
   * pipeline stuck or silent this long is presumed dead, and a rebuild goes ahead without it (its
   * held batch is then refused). Longer than `blockMs`. @default max(claimIdleMs, 3 × blockMs)
   */
  leaseMs?: number;
  logger?: Logger;
  metrics?: SaleMetrics;
  /** Test hooks around the commit (fault injection): awaited inside the processing of a batch. */
  faults?: { beforeCommit?: () => Promise<void>; afterCommit?: () => Promise<void> };
}

/** What a pipeline is doing, for /healthz. */
export interface PipelineHealth {
  readonly consumer: string;
  readonly running: boolean;
  /** Since when (epoch ms) every step has failed (the database or Redis is down); undefined: fine. */
  readonly failingSince: number | undefined;
  readonly lastError: string | undefined;
}
/** Batches one step records at most while reading ahead (then it does its housekeeping). */
const READ_AHEAD_ROUNDS = 20;

/**
 * The order pipeline: reads reservations and lifecycle events (paid, cancelled, expired) from every
 * open sale's stream through one consumer group, records them in the database in batches, opens the
 * confirmed orders of sales with a payment window for the expiry sweeper (the sale's deadlines set),
 * and acknowledges (XACK) only after all that.
 *
 * - At least once: an entry read but not acknowledged stays in the group's pending list; this
 *   consumer re-reads its own pending entries first (after a restart or a failed batch), and entries
 *   of a consumer that stays silent for `claimIdleMs` are claimed (XAUTOCLAIM) by another.
 * - Exactly one effect: the database records each (sale, stream entry) once (the orders inbox), so a
 *   redelivery is acknowledged without being applied again.
 * - Poison: a malformed entry, or one that keeps failing alone after `maxDeliveries`, is moved to the
 *   sale's dead-letter stream, logged and counted — never silently dropped.
 * - Stream order: consumers read a sale's entries in parallel, but a batch is recorded only once the
 *   entries before it are (stream-order.ts) — a purchase of a unit a cancellation just gave back is
 *   never decided before that cancellation.
 *
 * This class is the loop and its lease (the recovery fence, lease.ts): what a step reads, records and
 * holds. Reading is `StreamReader`'s (stream-reader.ts), recording a batch `BatchRecorder`'s
 * (batch-recorder.ts), acknowledging and dead-lettering `Acknowledger`'s (acknowledge.ts).
 */
export class OrderPipeline {
  readonly consumer: string;
  private readonly options: Required<Omit<OrderPipelineOptions, 'consumer' | 'metrics' | 'faults'>>;
  private running = false;
  private loop: Promise<void> | undefined;
  private ownPendingToCheck = true;
  private lastClaimAt = 0;
  private lastTrimAt = 0;
  private failingSince: number | undefined;
  private lastError: string | undefined;
  private readonly lease: PipelineLease;
  /** The recovery fence the current step began at (see lease.ts). */
  private stepFence = 0;
  private readonly reader: StreamReader;
  private readonly recorder: BatchRecorder;
  private readonly acknowledger: Acknowledger;

  constructor(
    context: SaleContext,
    db: Database,
    private readonly config: OrderPipelineOptions = {},
  ) {
    this.consumer = config.consumer ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.options = {
      batchSize: config.batchSize ?? 1000,
      blockMs: config.blockMs ?? 1000,
      claimIdleMs: config.claimIdleMs ?? 10_000,
      maxDeliveries: config.maxDeliveries ?? 5,
      trimEveryMs: config.trimEveryMs ?? 5_000,
      leaseMs: config.leaseMs ?? Math.max(config.claimIdleMs ?? 10_000, 3 * (config.blockMs ?? 1000)),
      logger: config.logger ?? silentLogger,
    };
    const { batchSize, claimIdleMs, logger, maxDeliveries } = this.options;
    const { metrics, faults } = config;
    this.lease = new PipelineLease(db, this.consumer, this.options.leaseMs, logger);
    const progress = () => this.lease.progress();
    this.reader = new StreamReader(context, {
      consumer: this.consumer,
      batchSize,
      claimIdleMs,
      layouts: recordLayouts(context, db),
      onRead: progress,
    });
    this.acknowledger = new Acknowledger(context, { logger, metrics });
    this.recorder = new BatchRecorder(context.redis, db, this.reader, this.acknowledger, {
      maxDeliveries,
      logger,
      metrics,
      faults,
      leaseOfStep: () => ({ consumer: this.consumer, stepFence: this.stepFence }),
      onRecorded: progress,
      onBatchFailed: () => {
        this.ownPendingToCheck = true;
      },
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.lease.start();
    this.loop = this.run();
  }

  /** Stops after the current batch; acknowledged work is never interrupted half-way. */
  async stop(): Promise<void> {
    this.running = false;
    this.reader.disconnect(); // ends a blocking read at once
    await this.loop;
    await this.lease.stop();
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.step(this.options.blockMs);
        this.failingSince = undefined;
      } catch (error) {
        if (!this.running) break;
        this.failingSince ??= Date.now();
        this.lastError = (error as Error).message;
        this.options.logger.warn(
          { err: error, consumer: this.consumer },
          'order pipeline step failed; retrying',
        );
        this.config.metrics?.pipelineErrors.inc({ kind: isTransient(error) ? 'transient' : 'permanent' });
        this.ownPendingToCheck = true;
        await delay(250);
      }
    }
  }

  get health(): PipelineHealth {
    const { consumer, running, failingSince, lastError } = this;
    return { consumer, running, failingSince, lastError };
  }

  /**
   * One round: own pending entries, else new entries (waiting up to `blockMs`), then housekeeping.
   * Returns how many entries were acknowledged. Public for tests and `drain`.
   *
   * Nothing read in a step is held after it (recorded, or dropped and left pending in Redis), which
   * is what the lease reports to a waiting rebuild at the end of each step.
   */
  async step(blockMs = 0): Promise<number> {
    const fence = await this.lease.beginStep();
    this.stepFence = fence;
    try {
      return await this.readAndRecord(blockMs);
    } catch (error) {
      if (error instanceof EarlierEntriesPending) {
        // Not a failure: the batch stays pending and is read again once the entries before it are in.
        this.ownPendingToCheck = true;
        return 0;
      }
      if (!(error instanceof FencedOutStep)) {
        this.lease.registerAgain();
        throw error;
      }
      await this.dropFencedOut(error);
      return 0;
    } finally {
      // A pipeline not running holds nothing until it is stepped again: no rebuild waits for it.
      if (this.running) await this.lease.drained(fence);
      else await this.lease.release();
    }
  }

  private async readAndRecord(blockMs: number): Promise<number> {
    const streams = await this.reader.openStreams();
    if (streams.length === 0) {
      if (blockMs > 0) await delay(Math.min(blockMs, 200));
      return 0;
    }
    let acked = 0;
    try {
      if (this.ownPendingToCheck) {
        const own = await this.reader.read(streams, '0', 0);
        if (own.length === 0) this.ownPendingToCheck = false;
        else acked += (await this.recorder.process(own)).acked;
      }
      if (!this.ownPendingToCheck) acked += await this.processNew(streams, blockMs);
    } catch (error) {
      if (!(error instanceof EarlierEntriesPending)) throw error;
      // The entries before ours may be a dead consumer's: claiming them below is what unblocks us.
      this.ownPendingToCheck = true;
    }
    const now = Date.now();
    if (now - this.lastClaimAt >= this.options.claimIdleMs / 2) {
      this.lastClaimAt = now;
      acked += await this.claimAbandoned(streams);
    }
    if (now - this.lastTrimAt >= this.options.trimEveryMs) {
      this.lastTrimAt = now;
      await this.reader.trim(streams);
    }
    return acked;
  }

  /**
   * New entries. While batches come full (a backlog), the next batch is read while this one is being
   * recorded, so Redis and the database work at the same time. Entries read ahead are this consumer's
   * pending entries: if recording fails they are read again with the rest (ownPendingToCheck).
   * Returns after `READ_AHEAD_ROUNDS` batches at most, for the housekeeping of `step`.
   */
  private async processNew(streams: string[], blockMs: number): Promise<number> {
    let acked = 0;
    let batch = await this.reader.read(streams, '>', blockMs);
    for (let round = 1; batch.length > 0; round++) {
      const ahead =
        batch.length >= this.options.batchSize && round < READ_AHEAD_ROUNDS
          ? this.reader.read(streams, '>', 0)
          : undefined;
      ahead?.catch(() => undefined); // awaited below; a failure then is the step's
      try {
        acked += (await this.recorder.process(batch, { fresh: true })).acked;
      } catch (error) {
        if (ahead) await this.settleReadAhead(await ahead.catch(() => []), error);
        throw error;
      }
      if (!ahead) break;
      batch = await ahead;
    }
    return acked;
  }

  /**
   * The batch before the one read ahead failed (`error`), and the step ends. The entries read ahead
   * may exist nowhere else — Redis restarted empty while they were in flight (the failure may be that
   * very XACK) — so they are recorded before the step ends: they stay pending, and are acknowledged
   * when they are delivered again (as duplicates). A fenced-out step records nothing: they are
   * dropped with the refused batch.
   */
  private async settleReadAhead(entries: ReadEntry[], error: unknown): Promise<void> {
    if (entries.length === 0) return;
    if (error instanceof EarlierEntriesPending) return; // Redis has them all: read again with the batch
    if (error instanceof FencedOutStep) {
      error.entries.push(...entries);
      return;
    }
    try {
      // Redis may be down (the failure): then the entries before them cannot be asked about, and
      // recording them out of order beats losing them.
      await this.recorder.process(entries, { fresh: true, rescue: true });
    } catch (aheadError) {
      if (aheadError instanceof FencedOutStep) await this.dropFencedOut(aheadError);
      else
        this.options.logger.warn(
          { err: aheadError, consumer: this.consumer, count: entries.length },
          'could not record the batch read ahead either; it stays pending in Redis',
        );
    }
  }

  /**
   * A rebuild went ahead without this pipeline (its lease lapsed, or it held the rebuild up too long)
   * and did not count what the step read: recording it now would turn acknowledged orders into
   * sold_out or limit rejections. The entries are dropped; those Redis still has are read again (the
   * rebuild counted them), the others are lost — logged and counted, never misrecorded.
   */
  private async dropFencedOut(step: FencedOutStep): Promise<void> {
    this.ownPendingToCheck = true;
    this.lease.registerAgain();
    const reservations = step.entries.filter(
      (entry) => this.acknowledger.parse(entry)?.kind === 'reservation',
    );
    // Gone from Redis, or cannot tell: counted as lost.
    const gone = await Promise.all(reservations.map((entry) => this.reader.isGone(entry)));
    const lost = reservations.filter((_, i) => gone[i]);
    if (lost.length > 0) this.config.metrics?.ordersLost.inc({ reason: 'fenced' }, lost.length);
    this.options.logger.error(
      {
        consumer: this.consumer,
        dropped: step.entries.length,
        lost: lost.length,
        lostEntries: lost.slice(0, 100).map((entry) => `${entry.stream} ${entry.id}`),
      },
      'batch fenced out by a rebuild of the sale: dropped unrecorded; orders Redis no longer has are lost',
    );
  }

  /** Processes everything available now (new, own pending, abandoned); for tests and shutdown. */
  async drain(): Promise<number> {
    let total = 0;
    this.lastClaimAt = 0;
    for (;;) {
      const acked = await this.step(0);
      total += acked;
      if (acked === 0 && !this.ownPendingToCheck) return total;
    }
  }

  /** Takes over entries another consumer has left pending for `claimIdleMs`. */
  private async claimAbandoned(streams: string[]): Promise<number> {
    let acked = 0;
    for (const stream of streams) {
      const entries = await this.reader.claimAbandoned(stream);
      if (entries.length === 0) continue;
      this.options.logger.warn(
        { stream, count: entries.length, consumer: this.consumer },
        'claimed abandoned order entries',
      );
      acked += (await this.recorder.process(entries)).acked;
    }
    return acked;
  }

  async close(): Promise<void> {
    await this.stop();
  }
}
