import { RedisLockClient } from 'lockstock';
import { silentLogger, type Logger } from '../logger.js';
import type { SaleRedis } from '../redis.js';
import type { PartKeys } from '../shards/layout.js';
import type { PartRebuildReport } from './rebuild-part.js';
import { records } from '../store/records.js';
import type { Sale } from '../types.js';
import { SaleRecoveringError } from '../recovering.js';
import { fencePipelines } from './fence.js';
import { describeCondition, inspectSale, type RebuildCause } from './inspect.js';
import { rebuildSale, type RebuildReport } from './rebuild.js';
import type { RecoveryMonitorOptions } from './options.js';
import { underRecoveryLock } from './recovery-lock.js';
import { SplitSaleRecovery } from './split-sale-recovery.js';

/** What the sale's selling and settling paths ask before they touch Redis (SaleService). */
export interface SaleGate {
  /**
   * undefined: go ahead (the hot path: no promise, no Redis call); otherwise a promise that resolves
   * when the sale may be sold, or rejects with SaleRecoveringError (a 503).
   */
  admit(saleId: string): Promise<void> | undefined;
  /**
   * A script found no such sale in Redis. True if the record has it open: Redis lost it, a rebuild
   * is starting, and the caller answers 503 instead of 404.
   */
  missing(saleId: string): boolean;
}

export type { RebuildCause } from './inspect.js';
export type { RecoveryMonitorOptions } from './options.js';

/**
 * Keeps a process from selling on a Redis that is missing a sale or is older than the record, and
 * rebuilds such sales from the record (rebuild.ts). One per Redis connection that sells, settles or
 * expires orders.
 *
 * When it checks: at start; every time its connection comes back — a Redis restart always drops it,
 * and until the sales are checked on the new connection nothing is admitted (`admit` answers 503
 * before a command is sent: reservations queued offline would reach a Redis that may have lost data
 * before anyone looked); and every `checkEveryMs` (data lost without a dropped connection: keys
 * deleted, a failover behind a proxy). A reservation script answering "no such sale" for a sale the
 * record has open triggers a check at once.
 *
 * A sale found missing or behind is closed here at once (503s), and rebuilt by whichever process gets
 * its recovery lock (lockstock's own mutex, `sale:<id>:recovery`); the rebuild's flag closes it in
 * every other process, whose checks then see it back within `blockedCheckMs`.
 */
export class RecoveryMonitor implements SaleGate {
  private readonly redis: SaleRedis;
  private readonly logger: Logger;
  private readonly locks: RedisLockClient;
  /** Bumped whenever the connection closes: what was checked before is void. */
  private generation = 0;
  private verifiedGeneration = -1;
  private barrier: { generation: number; done: Promise<void> } | undefined;
  /** The record's open sales as of the last full check. */
  private open = new Map<string, Sale>();
  /** Sales not to be sold in this process now, and why. */
  private readonly blocked = new Map<string, string>();
  private readonly rebuilding = new Map<string, Promise<void>>();
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private lastFullCheck = 0;
  private readonly splitSales: SplitSaleRecovery;
  private readonly onClose = () => {
    this.generation++;
  };
  private readonly onReady = () => {
    void this.verify().catch(() => undefined); // logged in verify; requests retry it
  };

  constructor(private readonly options: RecoveryMonitorOptions) {
    this.redis = options.context.redis;
    this.logger = options.logger ?? silentLogger;
    this.locks = new RedisLockClient({
      redis: options.context.redis,
      keyPrefix: options.context.prefix,
      watchdogTimeoutMs: options.lockLeaseMs ?? 5_000,
    });
    this.splitSales = new SplitSaleRecovery({
      ...options,
      logger: this.logger,
      locks: this.locks,
      blocked: this.blocked,
      rebuilding: this.rebuilding,
    });
    this.locks.on('lost', (event) =>
      this.logger.warn({ lock: event.name, reason: event.reason }, 'recovery lock lost during a rebuild'),
    );
  }

  /** Checks every open sale and rebuilds the ones Redis lost (before the process serves), then keeps watching. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.redis.on('close', this.onClose);
    this.redis.on('ready', this.onReady);
    await this.verify();
    await Promise.all(this.rebuilding.values());
    this.schedule();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    this.redis.off('close', this.onClose);
    this.redis.off('ready', this.onReady);
    await Promise.all(this.rebuilding.values());
    await this.locks.close();
  }

  admit(saleId: string): Promise<void> | undefined {
    if (this.redis.status !== 'ready') {
      return Promise.reject(new SaleRecoveringError(saleId, 'the Redis connection is not up'));
    }
    if (this.verifiedGeneration !== this.generation) return this.verify().then(() => this.admitNow(saleId));
    if (this.blocked.has(saleId)) return Promise.reject(new SaleRecoveringError(saleId));
    return undefined;
  }

  /** `admit` for callers that cannot wait (the expiry sweeper skips a sale refused now). */
  admits(saleId: string): boolean {
    return (
      this.redis.status === 'ready' &&
      this.verifiedGeneration === this.generation &&
      !this.blocked.has(saleId)
    );
  }

  missing(saleId: string): boolean {
    const sale = this.open.get(saleId);
    if (!sale) return false;
    this.blocked.set(saleId, 'missing in Redis');
    void this.check(sale).catch((error: unknown) =>
      this.logger.warn({ err: error, saleId }, 'could not check a sale Redis does not have'),
    );
    return true;
  }

  /** Sales this process does not sell right now (being rebuilt, or not checked yet), for /healthz. */
  get recovering(): string[] {
    return [...this.blocked.keys()];
  }

  private async admitNow(saleId: string): Promise<void> {
    if (this.blocked.has(saleId)) throw new SaleRecoveringError(saleId);
  }

  /**
   * The barrier of the current connection: every open sale checked (and rebuilds started) once per
   * generation. A failed check (the record unreachable) is kept for 250 ms, so requests meanwhile
   * fail fast instead of each asking the database; then it is tried again.
   */
  private verify(): Promise<void> {
    const generation = this.generation;
    if (this.barrier?.generation === generation) return this.barrier.done;
    const done = this.checkAll({ fenceFirst: true }).then(() => {
      if (this.generation === generation) this.verifiedGeneration = generation;
      else return this.verify(); // the connection dropped while checking: check the new one
    });
    const barrier = { generation, done };
    this.barrier = barrier;
    done.catch((error: unknown) => {
      this.logger.warn(
        { err: error },
        'could not check the sales against the record; not selling until it can',
      );
      setTimeout(() => {
        if (this.barrier === barrier) this.barrier = undefined;
      }, 250).unref();
    });
    return done;
  }

  /**
   * Compares every open sale with the record. With `fenceFirst` (at start and on every new connection:
   * the barrier), the order pipelines first record what they hold (the recovery fence, fence.ts).
   * Without it, a Redis that came back older than what the pipelines had read — batches read, not yet
   * recorded, that the crash cut from the AOF — looks as far along as the record, whose newest entry
   * predates the cut: the sale sold those units again, and their orders were rejected once recorded
   * (issue 35). Once the fence is drained, the record holds everything read from the old Redis, and a
   * stream below it is seen. Nothing is admitted meanwhile (the barrier), so no new entry hides it.
   */
  private async checkAll(options: { fenceFirst?: boolean } = {}): Promise<void> {
    await this.options.beforeAdmitting?.();
    const sales = await records.listOpenSales(this.options.db);
    this.open = new Map(sales.map((sale) => [sale.id, sale]));
    for (const saleId of this.blocked.keys()) if (!this.open.has(saleId)) this.blocked.delete(saleId);
    if (options.fenceFirst && sales.length > 0) {
      const fenced = await fencePipelines(this.options.db, this.options.pipelineFence);
      if (fenced.waitedMs > 1_000 || fenced.fencedOut.length > 0)
        this.logger.info({ ...fenced }, 'waited for the order pipelines before checking the sales');
    }
    for (const sale of sales) await this.check(sale);
    this.lastFullCheck = Date.now();
  }

  /** Compares one sale with the record; closes it and starts a rebuild if Redis lost or forgot part of it. */
  private async check(sale: Sale): Promise<void> {
    if (this.rebuilding.has(sale.id)) return;
    if (sale.partTags) return this.splitSales.check(sale);
    const condition = await inspectSale(this.options.context, this.options.db, sale.id, this.keys(sale.id));
    if (condition.kind === 'ok') {
      if (this.blocked.delete(sale.id)) this.logger.info({ saleId: sale.id }, 'sale selling again');
      return;
    }
    const reason = describeCondition(condition);
    if (!this.blocked.has(sale.id))
      this.logger.warn({ saleId: sale.id, reason }, 'sale closed: Redis is not as the record');
    this.blocked.set(sale.id, reason);
    if (condition.kind === 'recovering' && (await this.lockOf(sale.id).isLocked())) return; // being rebuilt
    this.rebuild(sale, condition.kind, reason);
  }

  private lockOf(saleId: string) {
    return this.locks.mutex(`sale:${saleId}:recovery`);
  }

  private keys(saleId: string) {
    return this.options.context.keys.sale(saleId);
  }

  /** Rebuilds a sale in the background if this process gets its recovery lock (see rebuildNow). */
  private rebuild(sale: Sale, cause: RebuildCause, reason: string): void {
    const task = this.rebuildNow(sale, cause, reason)
      .then(() => undefined)
      .catch((error: unknown) =>
        this.logger.warn({ err: error, saleId: sale.id }, 'rebuild failed; it is tried again'),
      )
      .finally(() => this.rebuilding.delete(sale.id));
    this.rebuilding.set(sale.id, task);
  }

  /**
   * Rebuilds a sale from the record now, if it needs it and this process gets its recovery lock
   * (`reconcile --repair` calls it directly). Returns what was rebuilt; undefined when nothing was
   * (Redis was fine after all, someone else holds the lock, or the rebuild was superseded).
   */
  async rebuildNow(
    sale: Sale,
    cause: RebuildCause = 'missing',
    reason = 'asked to',
  ): Promise<RebuildReport | undefined> {
    return underRecoveryLock(this.lockOf(sale.id), this.logger, sale.id, async (handle, token) => {
      // Under the lock, look again: the previous holder may have just finished.
      const condition = await inspectSale(this.options.context, this.options.db, sale.id, this.keys(sale.id));
      if (condition.kind === 'ok') {
        this.blocked.delete(sale.id);
        return undefined;
      }
      const began = performance.now();
      const report = await rebuildSale(this.options, sale, this.keys(sale.id), token);
      if (!report || handle.signal.aborted) {
        this.logger.warn({ saleId: sale.id }, 'rebuild superseded (lock or flag lost); checking again');
        return undefined;
      }
      await this.redis.sadd(this.options.context.keys.activeSales, sale.id);
      const ms = Math.round(performance.now() - began);
      this.blocked.delete(sale.id);
      this.logger.warn(
        { saleId: sale.id, reason, ms, ...report },
        'sale rebuilt from the record; selling again',
      );
      this.options.onRebuilt?.(sale.id, cause, report, ms);
      return report;
    });
  }

  /** Rebuilds one part of a split sale now (see SplitSaleRecovery.rebuildPartNow). */
  async rebuildPartNow(
    sale: Sale,
    keys: PartKeys,
    cause: RebuildCause = 'missing',
    options: { force?: boolean } = {},
  ): Promise<PartRebuildReport | undefined> {
    return this.splitSales.rebuildPartNow(sale, keys, cause, options);
  }

  /** Sales closed here are looked at every `blockedCheckMs`, all open sales every `checkEveryMs`. */
  private schedule(): void {
    if (!this.running) return;
    const every = this.options.checkEveryMs ?? 1_000;
    const blockedEvery = this.options.blockedCheckMs ?? 100;
    const delay = this.blocked.size > 0 ? blockedEvery : every > 0 ? every : blockedEvery;
    this.timer = setTimeout(() => void this.tick().finally(() => this.schedule()), delay);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.redis.status !== 'ready') return;
    const every = this.options.checkEveryMs ?? 1_000;
    try {
      if (this.verifiedGeneration !== this.generation) {
        await this.verify();
      } else if (every > 0 && Date.now() - this.lastFullCheck >= every) {
        await this.checkAll();
      } else {
        for (const saleId of [...this.blocked.keys()]) {
          const sale = this.open.get(saleId);
          if (sale) await this.check(sale);
        }
      }
    } catch (error) {
      // Once stopped, a check still running meets the connection closing under it: not a failure to
      // report (stop() does not wait for it: a check stuck on a paused Redis would hold the stop).
      if (this.running) this.logger.warn({ err: error }, 'recovery check failed; trying again');
    }
  }
}
