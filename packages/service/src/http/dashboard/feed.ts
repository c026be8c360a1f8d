import { silentLogger, type Logger } from '../../sale/logger.js';
import { ATTEMPT_OUTCOMES, type AttemptOutcome } from '../../sale/outcomes.js';
import type { SaleStats } from '../../sale/stats.js';
import type { DashboardPoint, DashboardSnapshot, LiveEvents, LiveSale } from './schemas.js';

export interface LiveFeedOptions {
  /** Reads the numbers of one tick (readSaleStats). */
  read: () => Promise<SaleStats[]>;
  /** @default 1000 */
  tickMs?: number;
  /** Points kept for charts of browsers that connect later. @default 300 (5 min at 1 s) */
  historyPoints?: number;
  /** Rates are averaged over about this long, ms: processes flush their counts at different moments. @default 3000 */
  rateWindowMs?: number;
  /** Live connections this process accepts. @default 200 */
  maxSubscribers?: number;
  logger?: Logger;
}

/** A subscriber gets ready-made Server-Sent Events text. */
export type Subscriber = (chunk: string) => void;

type Attempts = Record<AttemptOutcome, number>;

export function sseEvent<E extends keyof LiveEvents>(event: E, data: LiveEvents[E]): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The dashboard's numbers, read once per tick per process however many browsers watch: the tick
 * serialises one event and writes the same text to every subscriber. It ticks only while someone
 * watches; `current()` serves the JSON route from the same reads.
 */
export class LiveFeed {
  private readonly subscribers = new Set<Subscriber>();
  private readonly points: DashboardPoint[] = [];
  /** Recent attempt totals per sale, for rates. */
  private readonly recent: Array<{ t: number; attempts: Map<string, Attempts> }> = [];
  private latest: { t: number; snapshot: DashboardSnapshot; point: DashboardPoint } | undefined;
  private reading: Promise<NonNullable<LiveFeed['latest']>> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly tickMs: number;
  private readonly historyPoints: number;
  private readonly rateWindowMs: number;
  private readonly maxSubscribers: number;
  private readonly logger: Logger;

  constructor(private readonly options: LiveFeedOptions) {
    this.tickMs = options.tickMs ?? 1000;
    this.historyPoints = options.historyPoints ?? 300;
    this.rateWindowMs = options.rateWindowMs ?? 3000;
    this.maxSubscribers = options.maxSubscribers ?? 200;
    this.logger = options.logger ?? silentLogger;
  }

  /** This tick's snapshot if it is fresh, else one read now (concurrent callers share the read). */
  async current(): Promise<DashboardSnapshot> {
    if (this.latest && Date.now() - this.latest.t < this.tickMs) return this.latest.snapshot;
    return (await this.read()).snapshot;
  }

  /** Whether this process has as many subscribers as it accepts. */
  get full(): boolean {
    return this.subscribers.size >= this.maxSubscribers;
  }

  /**
   * Adds a subscriber (check `full` first), sends it the history and the latest tick, and starts
   * ticking. Returns the unsubscribe function.
   */
  subscribe(send: Subscriber): () => void {
    this.subscribers.add(send);
    send(sseEvent('history', { points: this.points }));
    if (this.latest) send(sseEvent('tick', { snapshot: this.latest.snapshot, point: this.latest.point }));
    this.timer ??= setInterval(() => this.tick(), this.tickMs);
    return () => {
      this.subscribers.delete(send);
      if (this.subscribers.size === 0) this.stopTicking();
    };
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Stops ticking and forgets the subscribers (the routes end their responses). */
  close(): void {
    this.subscribers.clear();
    this.stopTicking();
  }

  private stopTicking(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    if (this.reading) {
      // Still reading (a slow database): a comment keeps idle-timeouts of proxies and sockets away.
      this.broadcast(': reading\n\n');
      return;
    }
    this.read().then(
      ({ snapshot, point }) => this.broadcast(sseEvent('tick', { snapshot, point })),
      (error: unknown) => {
        this.logger.warn({ err: error }, 'dashboard tick failed');
        this.broadcast(
          sseEvent('unavailable', {
            error: 'service_unavailable',
            message: 'Redis or the database did not answer; retrying every second.',
          }),
        );
      },
    );
  }

  private broadcast(chunk: string): void {
    for (const send of this.subscribers) send(chunk);
  }

  private read(): Promise<NonNullable<LiveFeed['latest']>> {
    if (!this.reading) {
      // Stamped when the read starts: a snapshot shows nothing older than its time.
      const t = Date.now();
      this.reading = this.options
        .read()
        .then((stats) => this.record(stats, t))
        .finally(() => (this.reading = undefined));
    }
    return this.reading;
  }

  private record(stats: SaleStats[], t: number): NonNullable<LiveFeed['latest']> {
    const base = this.rateBase(t);
    const sales = stats.map((sale) => toLiveSale(sale, base ? ratesOf(sale, base, t) : zeroRates()));
    const snapshot: DashboardSnapshot = { at: new Date(t).toISOString(), tickMs: this.tickMs, sales };
    const point: DashboardPoint = {
      t,
      sales: Object.fromEntries(
        sales.map((s) => [
          s.id,
          {
            remaining: s.remaining,
            rates: s.rates,
            recordedUnits: s.recorded.confirmedUnits,
            pending: s.pipeline.pending + s.pipeline.undelivered,
            lagMs: s.pipeline.lagMs,
          },
        ]),
      ),
    };
    this.recent.push({ t, attempts: new Map(stats.map((s) => [s.id, s.attempts])) });
    while (this.recent.length > 0 && t - (this.recent[0] as { t: number }).t > 2 * this.rateWindowMs)
      this.recent.shift();
    this.points.push(point);
    if (this.points.length > this.historyPoints) this.points.shift();
    this.latest = { t, snapshot, point };
    return this.latest;
  }

  /** The oldest read within the rate window (not this one); undefined right after a pause. */
  private rateBase(t: number) {
    const base = this.recent.find((r) => t - r.t <= this.rateWindowMs + this.tickMs / 2);
    return base && t - base.t >= this.tickMs / 2 ? base : undefined;
  }
}

function zeroRates(): Attempts {
  return Object.fromEntries(ATTEMPT_OUTCOMES.map((o) => [o, 0])) as Attempts;
}

function ratesOf(sale: SaleStats, base: { t: number; attempts: Map<string, Attempts> }, t: number): Attempts {
  const before = base.attempts.get(sale.id);
  const seconds = (t - base.t) / 1000;
  const rates = zeroRates();
  for (const outcome of ATTEMPT_OUTCOMES) {
    // Counters only grow; a deleted key must not draw a negative rate.
    const delta = sale.attempts[outcome] - (before?.[outcome] ?? sale.attempts[outcome]);
    rates[outcome] = Math.max(0, Math.round((delta / seconds) * 10) / 10);
  }
  return rates;
}

function toLiveSale(sale: SaleStats, rates: Attempts): LiveSale {
  return {
    id: sale.id,
    name: sale.name,
    stock: sale.stock,
    perUserLimit: sale.perUserLimit,
    startsAt: sale.startsAt.toISOString(),
    endsAt: sale.endsAt.toISOString(),
    status: sale.status,
    remaining: sale.remaining,
    sold: sale.stock - (sale.remaining ?? sale.stock - sale.persistedSold),
    attempts: sale.attempts,
    rates,
    visitors: sale.visitors,
    buyers: sale.buyers,
    conversion: sale.visitors > 0 ? Math.min(1, sale.buyers / sale.visitors) : null,
    recorded: {
      confirmedOrders: sale.confirmedOrders,
      confirmedUnits: sale.persistedSold,
      rejectedOrders: sale.rejectedOrders,
    },
    pipeline: sale.pipeline,
    parts: sale.parts,
  };
}
