import type { SaleContext } from './context/context.js';
import type { SaleRedis } from './redis.js';
import { silentLogger, type Logger } from './logger.js';
import type { AttemptOutcome } from './outcomes.js';

export interface SaleActivityOptions {
  /** How often buffered counts are written to Redis, ms. @default 1000 */
  flushEveryMs?: number;
  /** Visitor ids buffered per sale; more trigger an early write, and are dropped while it runs. @default 10000 */
  maxBufferedVisitors?: number;
  logger?: Logger;
}

/**
 * Counts purchase outcomes and visitors per sale for the dashboard. The purchase path only updates
 * a Map; about once a second the counts go to Redis as one pipeline per sale (an HINCRBY per
 * outcome and one PFADD with the buffered visitor ids; one pipeline per sale because its keys share
 * the sale's hash tag, so it stays on one Cluster node). Every `serve` process adds to the same keys,
 * so the dashboard reads global numbers.
 *
 * Counts of a write that failed are put back for the next one. A write whose reply was lost may
 * count twice: these are dashboard numbers, not the record (PostgreSQL is).
 */
export class SaleActivity {
  private counts = new Map<string, Map<AttemptOutcome, number>>();
  private visitors = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private readonly flushEveryMs: number;
  private readonly maxBufferedVisitors: number;
  private readonly redis: SaleRedis;
  private readonly logger: Logger;

  constructor(
    private readonly context: SaleContext,
    options: SaleActivityOptions = {},
  ) {
    this.flushEveryMs = options.flushEveryMs ?? 1000;
    this.maxBufferedVisitors = options.maxBufferedVisitors ?? 10_000;
    this.redis = context.redis;
    this.logger = options.logger ?? silentLogger;
  }

  /** Starts the periodic write (the timer does not keep the process alive). */
  start(): this {
    this.timer ??= setInterval(() => void this.flush(), this.flushEveryMs).unref();
    return this;
  }

  /** Counts one purchase attempt. The caller checked that the sale exists. */
  attempt(saleId: string, outcome: AttemptOutcome, units = 1): void {
    let bySale = this.counts.get(saleId);
    if (!bySale) this.counts.set(saleId, (bySale = new Map()));
    bySale.set(outcome, (bySale.get(outcome) ?? 0) + units);
  }

  /** Remembers a visitor of a sale (a user id or a client address, prefixed so they cannot collide). */
  visit(saleId: string, visitor: string): void {
    let ids = this.visitors.get(saleId);
    if (!ids) this.visitors.set(saleId, (ids = new Set()));
    if (ids.size < this.maxBufferedVisitors) ids.add(visitor);
    else void this.flush(); // a HyperLogLog estimates anyway; losing a few ids under a flood is fine
  }

  /** Writes what is buffered; writes never overlap (a call waits for the running one, then writes). */
  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async write(): Promise<void> {
    const counts = this.counts;
    const visitors = this.visitors;
    this.counts = new Map();
    this.visitors = new Map();
    const saleIds = new Set([...counts.keys(), ...visitors.keys()]);
    const failures = await Promise.all(
      [...saleIds].map((saleId) => this.writeSale(saleId, counts.get(saleId), visitors.get(saleId))),
    );
    const failed = failures.filter((error) => error !== undefined);
    if (failed.length > 0) {
      this.logger.warn(
        { err: failed[0], sales: failed.length },
        'dashboard counts not written to Redis; kept for the next attempt',
      );
    }
  }

  /** Returns the first error (its counts are buffered again), or undefined. */
  private async writeSale(
    saleId: string,
    counts: Map<AttemptOutcome, number> | undefined,
    visitors: Set<string> | undefined,
  ): Promise<unknown> {
    const keys = this.context.keys.sale(saleId);
    const pipeline = this.redis.pipeline();
    const sent: Array<() => void> = []; // per command: how to buffer it again
    for (const [outcome, units] of counts ?? []) {
      pipeline.hincrby(keys.outcomes, outcome, units);
      sent.push(() => this.attempt(saleId, outcome, units));
    }
    if (visitors && visitors.size > 0) {
      pipeline.pfadd(keys.visitors, ...visitors);
      sent.push(() => visitors.forEach((id) => this.visit(saleId, id)));
    }
    let replies: Array<[Error | null, unknown]> | null;
    try {
      replies = await pipeline.exec();
    } catch (error) {
      sent.forEach((restore) => restore());
      return error;
    }
    let firstError: unknown;
    sent.forEach((restore, i) => {
      const error = replies ? replies[i]?.[0] : new Error('the pipeline was discarded');
      if (!error) return;
      firstError ??= error;
      restore();
    });
    return firstError;
  }
}
