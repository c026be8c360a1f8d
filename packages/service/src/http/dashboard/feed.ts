import { silentLogger, type Logger } from '../../sale/logger.js';
import { ATTEMPT_OUTCOMES, type AttemptOutcome } from '../../sale/outcomes.js';
import type { SaleStats } from '../../sale/stats.js';
import { MemoryHistory, type HistoryStore, type StoredPoint } from './history.js';
import type { DashboardPoint, DashboardSnapshot, LiveEvents, LiveSale, SalePoint } from './schemas.js';

export interface LiveFeedOptions {
  /** Reads the numbers of one tick (readSaleStats). */
  read: () => Promise<SaleStats[]>;
  /** @default 1000 */
  tickMs?: number;
  /**
   * Where the history lives (one point a second): the routes give the feed a RedisHistory shared by
   * every process. @default a MemoryHistory of this process
   */
  history?: HistoryStore;
  /** How far back a new viewer's charts start, ms. @default 600000 (10 minutes) */
  historyMs?: number;
  /** When no sale is open, an unwatched process records nothing for this long, ms. @default 5000 */
  idleMs?: number;
  /** Rates are averaged over about this long, ms: processes flush their counts at different moments. @default 3000 */
  rateWindowMs?: number;
  /** Live connections this process accepts. @default 200 */
  maxSubscribers?: number;
  logger?: Logger;
}

/** A subscriber gets ready-made Server-Sent Events text. */
export type Subscriber = (chunk: string) => void;

type Attempts = Record<AttemptOutcome, number>;

const UNAVAILABLE: LiveEvents['unavailable'] = {
  error: 'service_unavailable',
  message: 'Redis or the database did not answer; retrying every second.',
};

interface Reading {
  t: number;
  snapshot: DashboardSnapshot;
  point: DashboardPoint;
  /** This read as a history point, stamped with the start of its second. */
  stored: StoredPoint;
}

export function sseEvent<E extends keyof LiveEvents>(event: E, data: LiveEvents[E]): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The dashboard's numbers, read once per tick per process however many browsers watch: the tick
 * serialises one event and writes the same text to every subscriber. `current()` serves the JSON
 * route from the same reads.
 *
 * The history (the charts of a browser that connects or reloads) is a HistoryStore: in `serve`, a
 * Redis stream every process shares, so a reload shows the sale so far whichever process answers.
 * Once `startRecording()` is called (the app listens), every process ticks; each second the first to
 * claim it reads the numbers and appends one point, while a sale is open (active or sold out) or
 * someone watches. Others read only for their own viewers; their points for a second already written
 * are refused by the store. Without viewers and without an open sale, the claimer marks the history
 * idle for a few seconds: then no process reads at all.
 */
export class LiveFeed {
  private readonly subscribers = new Set<Subscriber>();
  /** Recent attempt totals per sale, for rates. */
  private readonly recent: Array<{ t: number; attempts: Map<string, Attempts> }> = [];
  private latest: Reading | undefined;
  private reading: Promise<Reading> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private recording = false;
  private claimFailing = false;
  private history: HistoryStore;
  private readonly tickMs: number;
  private readonly historyMs: number;
  private readonly idleMs: number;
  private readonly rateWindowMs: number;
  private readonly maxSubscribers: number;
  private readonly logger: Logger;

  constructor(private readonly options: LiveFeedOptions) {
    this.tickMs = options.tickMs ?? 1000;
    this.historyMs = options.historyMs ?? 600_000;
    this.idleMs = options.idleMs ?? 5000;
    this.history = options.history ?? new MemoryHistory(Math.ceil(this.historyMs / this.tickMs));
    this.rateWindowMs = options.rateWindowMs ?? 3000;
    this.maxSubscribers = options.maxSubscribers ?? 200;
    this.logger = options.logger ?? silentLogger;
  }

  /** Keeps the history in `store` from now on (the routes pass the app's Redis). */
  useHistory(store: HistoryStore): void {
    this.history = store;
  }

  /** Records the history even while nobody watches (see the class), until `close()`. */
  startRecording(): void {
    this.recording = true;
    this.timer ??= setInterval(() => this.tick(), this.tickMs);
  }

  /** This tick's snapshot if it is fresh, else one read now (concurrent callers share the read). */
  async current(): Promise<DashboardSnapshot> {
    if (this.latest && Date.now() - this.latest.t < this.tickMs) return this.latest.snapshot;
    return (await this.read()).snapshot;
  }

  /** The history of the last `historyMs`, with the rates derived from the stored totals. */
  async points(): Promise<DashboardPoint[]> {
    return withRates(await this.history.read(Date.now() - this.historyMs), this.rateWindowMs, this.tickMs);
  }

  /** Whether this process has as many subscribers as it accepts. */
  get full(): boolean {
    return this.subscribers.size >= this.maxSubscribers;
  }

  /**
   * Adds a subscriber (check `full` first), sends it the history (read from the store: what reached
   * it before is held back until then) and the latest tick, and starts ticking. Returns the
   * unsubscribe function. A history that cannot be read is sent empty, followed by `unavailable`.
   */
  subscribe(send: Subscriber): () => void {
    let held: string[] | undefined = [];
    const sink: Subscriber = (chunk) => (held ? held.push(chunk) : send(chunk));
    this.subscribers.add(sink);
    this.timer ??= setInterval(() => this.tick(), this.tickMs);
    void this.points()
      .then(
        (points) => sseEvent('history', { points }),
        (error: unknown) => {
          this.logger.warn({ err: error }, 'dashboard history could not be read');
          return sseEvent('history', { points: [] }) + sseEvent('unavailable', UNAVAILABLE);
        },
      )
      .then((first) => {
        const waiting = held ?? [];
        held = undefined;
        if (!this.subscribers.has(sink)) return;
        send(first);
        if (waiting.length === 0 && this.latest) {
          send(sseEvent('tick', { snapshot: this.latest.snapshot, point: this.latest.point }));
        }
        for (const chunk of waiting) send(chunk);
      });
    return () => {
      this.subscribers.delete(sink);
      if (this.subscribers.size === 0 && !this.recording) this.stopTicking();
    };
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Stops ticking and forgets the subscribers (the routes end their responses). */
  close(): void {
    this.subscribers.clear();
    this.recording = false;
    this.stopTicking();
  }

  private stopTicking(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    if (this.busy) {
      // Still reading (a slow database): a comment keeps idle-timeouts of proxies and sockets away.
      this.broadcast(': reading\n\n');
      return;
    }
    this.busy = true;
    void this.step().finally(() => (this.busy = false));
  }

  private async step(): Promise<void> {
    const watched = this.subscribers.size > 0;
    const now = Date.now();
    const claimed = await this.history.claim(now - (now % 1000)).then(
      (got) => {
        this.claimFailing = false;
        return got;
      },
      (error: unknown) => {
        // Said once per outage, not every second; a viewer's tick reports it as unavailable.
        if (!this.claimFailing) this.logger.warn({ err: error }, 'dashboard history: Redis did not answer');
        this.claimFailing = true;
        return false;
      },
    );
    if (!watched && !claimed) return;
    let reading: Reading;
    try {
      reading = await this.read();
    } catch (error) {
      this.logger.warn({ err: error }, 'dashboard tick failed');
      this.broadcast(sseEvent('unavailable', UNAVAILABLE));
      return;
    }
    this.broadcast(sseEvent('tick', { snapshot: reading.snapshot, point: reading.point }));
    const open = reading.snapshot.sales.some((s) => s.status === 'active' || s.status === 'sold_out');
    try {
      if (watched || open) await this.history.append(reading.stored);
      else await this.history.idle(this.idleMs);
    } catch (error) {
      this.logger.warn({ err: error }, 'dashboard history could not be written');
    }
  }

  private broadcast(chunk: string): void {
    for (const send of this.subscribers) send(chunk);
  }

  private read(): Promise<Reading> {
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

  private record(stats: SaleStats[], t: number): Reading {
    const base = this.rateBase(t);
    const sales = stats.map((sale) => toLiveSale(sale, base ? ratesOf(sale, base, t) : zeroRates()));
    const snapshot: DashboardSnapshot = { at: new Date(t).toISOString(), tickMs: this.tickMs, sales };
    const point: DashboardPoint = {
      t,
      sales: Object.fromEntries(sales.map((s) => [s.id, salePoint(s, s.rates)])),
    };
    const stored: StoredPoint = {
      t: t - (t % 1000),
      sales: Object.fromEntries(
        sales.map((s) => {
          const { remaining, recordedUnits, returnedUnits, pending, lagMs } = salePoint(s, s.rates);
          return [s.id, { remaining, attempts: s.attempts, recordedUnits, returnedUnits, pending, lagMs }];
        }),
      ),
    };
    this.recent.push({ t, attempts: new Map(stats.map((s) => [s.id, s.attempts])) });
    while (this.recent.length > 0 && t - (this.recent[0] as { t: number }).t > 2 * this.rateWindowMs)
      this.recent.shift();
    this.latest = { t, snapshot, point, stored };
    return this.latest;
  }

  /** The oldest read within the rate window (not this one); undefined right after a pause. */
  private rateBase(t: number) {
    const base = this.recent.find((r) => t - r.t <= this.rateWindowMs + this.tickMs / 2);
    return base && t - base.t >= this.tickMs / 2 ? base : undefined;
  }
}

function salePoint(sale: LiveSale, rates: Attempts): SalePoint {
  return {
    remaining: sale.remaining,
    rates,
    recordedUnits: sale.recorded.confirmedUnits,
    returnedUnits: sale.recorded.cancelledUnits + sale.recorded.expiredUnits,
    pending: sale.pipeline.pending + sale.pipeline.undelivered,
    lagMs: sale.pipeline.lagMs,
  };
}

/**
 * Stored points (attempt totals) as chart points (rates): each point's rates are measured from the
 * oldest earlier point within the rate window, as the live ticks are — whichever process wrote them.
 */
export function withRates(
  points: readonly StoredPoint[],
  rateWindowMs: number,
  tickMs: number,
): DashboardPoint[] {
  return points.map((point, i) => {
    let base: StoredPoint | undefined;
    for (let j = i - 1; j >= 0; j--) {
      const earlier = points[j] as StoredPoint;
      const age = point.t - earlier.t;
      if (age > rateWindowMs + tickMs / 2) break;
      if (age >= tickMs / 2) base = earlier;
    }
    const sales: Record<string, SalePoint> = {};
    for (const [id, sale] of Object.entries(point.sales)) {
      const before = base?.sales[id]?.attempts;
      const rates = zeroRates();
      if (base && before) {
        const seconds = (point.t - base.t) / 1000;
        for (const outcome of ATTEMPT_OUTCOMES) {
          const delta = (sale.attempts?.[outcome] ?? 0) - (before[outcome] ?? 0);
          rates[outcome] = Math.max(0, Math.round((delta / seconds) * 10) / 10);
        }
      }
      sales[id] = {
        remaining: sale.remaining ?? null,
        rates,
        recordedUnits: sale.recordedUnits ?? 0,
        returnedUnits: sale.returnedUnits ?? 0,
        pending: sale.pending ?? 0,
        lagMs: sale.lagMs ?? null,
      };
    }
    return { t: point.t, sales };
  });
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
      cancelledUnits: sale.cancelledUnits,
      expiredUnits: sale.expiredUnits,
    },
    pipeline: sale.pipeline,
    parts: sale.parts,
    ...(sale.raffle ? { raffle: sale.raffle } : {}),
    ...(sale.room ? { room: sale.room } : {}),
  };
}
