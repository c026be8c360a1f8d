import { hostname } from 'node:os';
import { tracingOn } from '../../support/tracing.js';
import { traceRecorded } from './trace-records.js';
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { duplicateClient, DEFAULT_KEY_PREFIX, isCluster, ScriptRunner } from 'lockstock/redis';
import { activeSalesKey, keysOfTag, ORDER_GROUP, saleIdOfKey, saleKeys } from '../keys.js';
import { deadlineMember, lifecycleScripts } from '../lifecycle/scripts.js';
import { silentLogger, type Logger } from '../logger.js';
import type { SaleMetrics } from '../metrics.js';
import { isSplit, layoutKeys, partOfTag, tagOfKey, type LayoutCache } from '../shards/layout.js';
import { recordLayouts } from '../shards/record-layouts.js';
import { applyOrders } from '../store/apply-orders.js';
import type { Database } from '../store/db.js';
import type { Decision, StreamEntry } from '../store/decide.js';
import { FencedOutError } from '../store/fenced-out.js';
import { FencedOutStep, isTransient } from './errors.js';
import { PipelineLease } from './lease.js';
import { awaitEarlierEntries, EarlierEntriesPending, streamWithEarlierPending } from './stream-order.js';
import {
  flattenReply,
  parsePartEntry,
  parseStreamEntry,
  trimAcknowledged,
  type ReadEntry,
  type StreamsReply,
} from './stream.js';
import type { SaleRedis } from '../redis.js';

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
  keyPrefix?: string;
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
/** How long a batch waits in hand for the entries before it to be recorded (stream-order.ts). */
const EARLIER_WAIT_MS = 1000;

/** The entries read together (`rescue`: read ahead of a batch that failed; see settleReadAhead). */
interface Batch {
  readonly batch: readonly ReadEntry[];
  readonly rescue: boolean;
}

interface Processed {
  decisions: Decision[];
  acked: number;
}

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
 */
export class OrderPipeline {
  readonly consumer: string;
  private readonly reader: SaleRedis;
  /** On a Cluster, the stream the next idle round blocks on (see readEachSlot). */
  private blockOn = 0;
  private readonly options: Required<Omit<OrderPipelineOptions, 'consumer' | 'metrics' | 'faults'>>;
  private running = false;
  private loop: Promise<void> | undefined;
  private ownPendingToCheck = true;
  private lastClaimAt = 0;
  private lastTrimAt = 0;
  private streams: string[] = [];
  private streamsReadAt = 0;
  private failingSince: number | undefined;
  private lastError: string | undefined;
  private readonly scripts: ScriptRunner;
  private readonly lease: PipelineLease;
  /** The recovery fence the current step began at (see lease.ts). */
  private stepFence = 0;
  /** A split sale's streams are its parts' (one per part, each on its own slot). */
  private readonly layouts: LayoutCache;

  constructor(
    private readonly redis: SaleRedis,
    private readonly db: Database,
    private readonly config: OrderPipelineOptions = {},
  ) {
    this.consumer = config.consumer ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.scripts = new ScriptRunner(redis);
    // Blocking reads need a connection of their own.
    this.reader = duplicateClient(redis);
    this.reader.on('error', () => undefined); // reported by the commands that fail
    this.options = {
      batchSize: config.batchSize ?? 1000,
      blockMs: config.blockMs ?? 1000,
      claimIdleMs: config.claimIdleMs ?? 10_000,
      maxDeliveries: config.maxDeliveries ?? 5,
      trimEveryMs: config.trimEveryMs ?? 5_000,
      leaseMs: config.leaseMs ?? Math.max(config.claimIdleMs ?? 10_000, 3 * (config.blockMs ?? 1000)),
      keyPrefix: config.keyPrefix ?? DEFAULT_KEY_PREFIX,
      logger: config.logger ?? silentLogger,
    };
    this.lease = new PipelineLease(db, this.consumer, this.options.leaseMs, this.options.logger);
    this.layouts = recordLayouts(redis, db, this.options.keyPrefix);
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
    const streams = await this.openStreams();
    if (streams.length === 0) {
      if (blockMs > 0) await delay(Math.min(blockMs, 200));
      return 0;
    }
    let acked = 0;
    try {
      if (this.ownPendingToCheck) {
        const own = await this.read(streams, '0', 0);
        if (own.length === 0) this.ownPendingToCheck = false;
        else acked += (await this.process(own)).acked;
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
      for (const stream of streams) await trimAcknowledged(this.redis, stream, ORDER_GROUP);
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
    let batch = await this.read(streams, '>', blockMs);
    for (let round = 1; batch.length > 0; round++) {
      const ahead =
        batch.length >= this.options.batchSize && round < READ_AHEAD_ROUNDS
          ? this.read(streams, '>', 0)
          : undefined;
      ahead?.catch(() => undefined); // awaited below; a failure then is the step's
      try {
        acked += (await this.process(batch, { fresh: true })).acked;
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
      await this.process(entries, { fresh: true, rescue: true });
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
    const reservations = step.entries.filter((entry) => this.parse(entry)?.kind === 'reservation');
    const gone = await Promise.all(
      reservations.map((entry) =>
        this.redis.xrange(entry.stream, entry.id, entry.id).then(
          (found) => found.length === 0,
          () => true, // cannot tell: counted as lost
        ),
      ),
    );
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

  private async openStreams(): Promise<string[]> {
    if (Date.now() - this.streamsReadAt > 1000) {
      const prefix = this.options.keyPrefix;
      const ids = await this.redis.smembers(activeSalesKey(prefix));
      const streams: string[] = [];
      for (const id of ids.sort()) {
        const layout = await this.layouts.get(id);
        if (isSplit(layout)) streams.push(...layoutKeys(layout, prefix).map((keys) => keys.stream));
        else streams.push(saleKeys(id, prefix).stream);
      }
      this.streams = streams;
      this.streamsReadAt = Date.now();
    }
    return this.streams;
  }

  private async read(streams: string[], from: '0' | '>', blockMs: number): Promise<ReadEntry[]> {
    if (streams.length > 1 && isCluster(this.redis)) return this.readEachSlot(streams, from, blockMs);
    return this.readOnce(streams, from, blockMs);
  }

  /**
   * On a Cluster one XREADGROUP cannot span slots (each sale's stream has its own hash tag): read the
   * streams one by one, and when none has anything, block on one of them in turn for a share of the
   * wait — a flash sale's single hot stream is still a plain blocking read.
   */
  private async readEachSlot(streams: string[], from: '0' | '>', blockMs: number): Promise<ReadEntry[]> {
    const entries: ReadEntry[] = [];
    for (const stream of streams) {
      if (entries.length >= this.options.batchSize) break;
      entries.push(...(await this.readOnce([stream], from, 0)));
    }
    if (entries.length > 0 || blockMs === 0) return entries;
    this.blockOn = (this.blockOn + 1) % streams.length;
    const share = Math.max(10, Math.floor(blockMs / streams.length));
    return this.readOnce([streams[this.blockOn] as string], from, share);
  }

  private async readOnce(streams: string[], from: '0' | '>', blockMs: number): Promise<ReadEntry[]> {
    const args: Array<string | number> = [
      'GROUP',
      ORDER_GROUP,
      this.consumer,
      'COUNT',
      this.options.batchSize,
    ];
    if (blockMs > 0) args.push('BLOCK', blockMs);
    args.push('STREAMS', ...streams, ...streams.map(() => from));
    const client = blockMs > 0 ? this.reader : this.redis;
    const reply = (await client.call('XREADGROUP', ...args)) as StreamsReply;
    this.lease.progress();
    return flattenReply(reply);
  }

  /** Takes over entries another consumer has left pending for `claimIdleMs`. */
  private async claimAbandoned(streams: string[]): Promise<number> {
    let acked = 0;
    for (const stream of streams) {
      const [, entries] = (await this.redis.call(
        'XAUTOCLAIM',
        stream,
        ORDER_GROUP,
        this.consumer,
        this.options.claimIdleMs,
        '0-0',
        'COUNT',
        this.options.batchSize,
      )) as [string, Array<[string, string[] | null]>];
      if (entries.length === 0) continue;
      this.options.logger.warn(
        { stream, count: entries.length, consumer: this.consumer },
        'claimed abandoned order entries',
      );
      acked += (await this.process(entries.map(([id, fields]) => ({ stream, id, fields: fields ?? [] }))))
        .acked;
    }
    return acked;
  }

  private saleIdOf(stream: string): string {
    return saleIdOfKey(stream) ?? '';
  }

  /** An entry of a sale's stream, or of a split sale's part stream (its part from the stream's tag). */
  private parse(entry: ReadEntry): StreamEntry | undefined {
    const saleId = this.saleIdOf(entry.stream);
    const tag = tagOfKey(entry.stream);
    const part = tag === undefined ? undefined : partOfTag(tag);
    return part === undefined ? parseStreamEntry(saleId, entry) : parsePartEntry(saleId, part, entry);
  }

  /** The key set a stream belongs to (a sale's, or a part's): its deadlines, settled, dead letters. */
  private keysOfStream(stream: string) {
    return keysOfTag(tagOfKey(stream) ?? `sale:${this.saleIdOf(stream)}`, this.options.keyPrefix);
  }

  /**
   * Records entries and acknowledges them. `fresh`: first deliveries (read with '>'), which no one can
   * have recorded yet, so the inbox lookup is skipped for them (the inbox's unique constraint still
   * refuses a second row); redelivered and claimed entries are always looked up.
   */
  private async process(entries: ReadEntry[], { fresh = false, rescue = false } = {}): Promise<Processed> {
    if (entries.length === 0) return { decisions: [], acked: 0 };
    const orders: StreamEntry[] = [];
    const byOrder = new Map<StreamEntry, ReadEntry>();
    for (const entry of entries) {
      const order = this.parse(entry);
      if (order) {
        orders.push(order);
        byOrder.set(order, entry);
      } else {
        await this.deadLetter(entry, 'malformed', 'the entry is neither a reservation nor an order event');
      }
    }
    const stopTimer = this.config.metrics?.batchSeconds.startTimer();
    const startedAt = Date.now();
    let decisions: Decision[];
    try {
      decisions = await this.record(orders, byOrder, fresh, { batch: entries, rescue });
    } catch (error) {
      if (error instanceof FencedOutError) throw new FencedOutStep(entries, error);
      throw error;
    }
    stopTimer?.();
    this.lease.progress();
    if (tracingOn()) traceRecorded(decisions, byOrder, startedAt, orders.length);
    await this.acknowledge(decisions, byOrder);
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
      this.ownPendingToCheck = true;
      if (error instanceof EarlierEntriesPending) throw error;
      if (isTransient(error)) throw error; // nothing acknowledged; the step retries after a pause
      this.config.metrics?.pipelineErrors.inc({ kind: 'permanent' });
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

  /** The recording pipeline and its step's fence, checked by applyOrders against a rebuild's. */
  private get leaseOfStep() {
    return { consumer: this.consumer, stepFence: this.stepFence };
  }

  private async applyWithFaults(orders: StreamEntry[], fresh: boolean, batch: Batch): Promise<Decision[]> {
    if (orders.length === 0) return [];
    const order = this.inStreamOrder(batch);
    await order.awaitEarlier();
    await this.config.faults?.beforeCommit?.();
    const decisions = await applyOrders(this.db, orders, {
      fresh,
      lease: this.leaseOfStep,
      afterLocking: order.afterLocking,
    });
    await this.config.faults?.afterCommit?.();
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
        decisions.push(...(await applyOrders(this.db, [order], { lease: this.leaseOfStep, afterLocking })));
      } catch (error) {
        if (error instanceof EarlierEntriesPending || isTransient(error)) throw error;
        const entry = byOrder.get(order) as ReadEntry;
        const deliveries = await this.deliveries(entry);
        if (deliveries >= this.options.maxDeliveries) {
          await this.deadLetter(entry, 'failing', `refused ${deliveries} times: ${(error as Error).message}`);
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

  private async deliveries(entry: ReadEntry): Promise<number> {
    const rows = (await this.redis.xpending(entry.stream, ORDER_GROUP, entry.id, entry.id, 1)) as Array<
      [string, string, number, number]
    >;
    return Number(rows[0]?.[3] ?? 0);
  }

  private async acknowledge(decisions: Decision[], byOrder: Map<StreamEntry, ReadEntry>): Promise<void> {
    await this.openForPayment(decisions, byOrder);
    const byStream = new Map<string, string[]>();
    for (const decision of decisions) {
      const entry = byOrder.get(decision.entry) as ReadEntry;
      if (decision.outcome === 'unknown_sale') {
        const { saleId } = decision.entry;
        await this.deadLetter(entry, 'unknown_sale', `sale ${saleId} is not in the database`);
        continue;
      }
      if (decision.outcome === 'unknown_order' || decision.outcome === 'conflict') {
        const found = decision.outcome === 'conflict' ? `holds it as ${decision.found}` : 'has no such order';
        const { orderId, status } = decision.entry;
        await this.deadLetter(
          entry,
          decision.outcome,
          `order ${orderId} is ${status} in Redis; the record ${found}`,
        );
        continue;
      }
      const ids = byStream.get(entry.stream) ?? [];
      ids.push(entry.id);
      byStream.set(entry.stream, ids);
      this.report(decision);
    }
    for (const [stream, ids] of byStream) await this.redis.xack(stream, ORDER_GROUP, ...ids);
  }

  /**
   * Puts the orders just recorded as confirmed (and redelivered ones still confirmed) into their sale's
   * deadlines set, before they are acknowledged: a crash in between redelivers them and they are
   * opened again; the script leaves orders settled meanwhile closed.
   */
  private async openForPayment(decisions: Decision[], byOrder: Map<StreamEntry, ReadEntry>): Promise<void> {
    // By the stream's key set: a split sale's orders wait in their part's deadlines set.
    const byStream = new Map<string, Array<string | number>>();
    for (const decision of decisions) {
      const byMs =
        decision.outcome === 'confirmed'
          ? decision.payByMs
          : decision.outcome === 'duplicate' && 'reopenByMs' in decision
            ? decision.reopenByMs
            : null;
      const entry = decision.entry;
      if (byMs === null || entry.kind === 'move') continue;
      const { orderId, userId, quantity } = entry;
      const stream = (byOrder.get(entry) as ReadEntry).stream;
      const args = byStream.get(stream) ?? [];
      args.push(deadlineMember(orderId, userId, quantity), byMs);
      byStream.set(stream, args);
    }
    for (const [stream, args] of byStream) {
      const keys = this.keysOfStream(stream);
      await this.scripts.run(lifecycleScripts.openOrders, [keys.deadlines, keys.settled], args);
    }
  }

  private report(decision: Decision): void {
    const metrics = this.config.metrics;
    if (decision.entry.kind === 'settlement') {
      if (decision.outcome === 'settled') metrics?.ordersSettled.inc({ status: decision.entry.status });
      else if (decision.outcome === 'duplicate') metrics?.duplicates.inc();
      return;
    }
    switch (decision.outcome) {
      case 'confirmed':
        metrics?.ordersRecorded.inc({ status: 'confirmed' });
        break;
      case 'rejected':
        metrics?.ordersRecorded.inc({ status: 'rejected' });
        metrics?.ordersRejected.inc({ reason: decision.reason });
        this.options.logger.warn(
          {
            orderId: decision.entry.orderId,
            saleId: decision.entry.saleId,
            userId: decision.entry.userId,
            reason: decision.reason,
          },
          'reservation rejected by the database (Redis admitted more than the record allows)',
        );
        break;
      case 'duplicate':
        metrics?.duplicates.inc();
        break;
      default:
        break;
    }
  }

  private async deadLetter(entry: ReadEntry, reason: string, detail: string): Promise<void> {
    const keys = this.keysOfStream(entry.stream); // on the stream's slot: one MULTI
    await this.redis
      .multi()
      .xadd(
        keys.dead,
        '*',
        'stream',
        entry.stream,
        'id',
        entry.id,
        'reason',
        reason,
        'detail',
        detail,
        ...entry.fields,
      )
      .xack(entry.stream, ORDER_GROUP, entry.id)
      .exec();
    this.config.metrics?.deadLetters.inc({ reason });
    this.options.logger.error(
      { stream: entry.stream, id: entry.id, reason, detail },
      'order entry dead-lettered',
    );
  }

  async close(): Promise<void> {
    await this.stop();
  }
}
