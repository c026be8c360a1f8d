import { DEFAULT_KEY_PREFIX } from 'lockstock/redis';
import type { AttemptOutcome } from '../../sale/outcomes.js';
import type { SaleRedis } from '../../sale/redis.js';

/**
 * One sale in a stored history point: what the charts plot, with the attempt totals rather than
 * rates (the rates are derived from consecutive points when the history is read, whoever wrote them).
 */
export interface StoredSalePoint {
  remaining: number | null;
  attempts: Record<AttemptOutcome, number>;
  recordedUnits: number;
  returnedUnits: number;
  pending: number;
  lagMs: number | null;
}

/** A point of the dashboard's history: `t` is the start of its second (ms since the epoch). */
export interface StoredPoint {
  t: number;
  sales: Record<string, StoredSalePoint>;
}

/**
 * Where the dashboard's history lives. One point per second: `append` refuses a second that has a
 * point already (or is older than the newest), so processes that record the same second write once.
 */
export interface HistoryStore {
  /**
   * Whether this process should read and record the second starting at `second` (ms): the first to
   * ask in a second gets it, so the others need not read the numbers at all.
   */
  claim(second: number): Promise<boolean>;
  /** Nobody needs to record for `ms` (no sale is open): claims are refused until then. */
  idle(ms: number): Promise<void>;
  /** Appends the point of its second; false if that second (or a later one) has a point already. */
  append(point: StoredPoint): Promise<boolean>;
  /** The points since `since` (ms), oldest first. */
  read(since: number): Promise<StoredPoint[]>;
}

/** A process's own history (a LiveFeed without Redis, as in unit tests). */
export class MemoryHistory implements HistoryStore {
  private readonly points: StoredPoint[] = [];
  private idleUntil = 0;

  constructor(private readonly maxPoints = 600) {}

  async claim(): Promise<boolean> {
    return Date.now() >= this.idleUntil;
  }

  async idle(ms: number): Promise<void> {
    this.idleUntil = Date.now() + ms;
  }

  async append(point: StoredPoint): Promise<boolean> {
    const last = this.points[this.points.length - 1];
    if (last && point.t <= last.t) return false;
    this.points.push(point);
    if (this.points.length > this.maxPoints) this.points.shift();
    return true;
  }

  async read(since: number): Promise<StoredPoint[]> {
    return this.points.filter((p) => p.t >= since);
  }
}

export interface RedisHistoryOptions {
  /** @default 'ls' */
  keyPrefix?: string;
  /** Points kept (XADD MAXLEN ~). @default 600 (10 minutes at one a second) */
  maxPoints?: number;
  /** The stream expires this long after its last point (nobody recorded). @default 20 minutes */
  ttlMs?: number;
}

/**
 * The history in a Redis stream shared by every `serve` process: one entry per second, its id
 * `<ms of the second>-0`. A second process writing the same second gets "ID equal or smaller" and
 * skips. Claims are a key set with NX that expires at the end of the second (or, when nobody needs
 * to record, a few seconds later). Two keys of their own, no hash tag: no script spans them.
 */
export class RedisHistory implements HistoryStore {
  readonly key: string;
  readonly claimKey: string;
  private readonly maxPoints: number;
  private readonly ttlMs: number;

  constructor(
    private readonly redis: SaleRedis,
    options: RedisHistoryOptions = {},
  ) {
    this.key = `${options.keyPrefix ?? DEFAULT_KEY_PREFIX}:dashboard:history`;
    this.claimKey = `${this.key}:claim`;
    this.maxPoints = options.maxPoints ?? 600;
    this.ttlMs = options.ttlMs ?? 20 * 60_000;
  }

  async claim(second: number): Promise<boolean> {
    const ttl = Math.max(1, second + 1000 - Date.now());
    return (await this.redis.set(this.claimKey, String(second), 'PX', ttl, 'NX')) === 'OK';
  }

  async idle(ms: number): Promise<void> {
    await this.redis.set(this.claimKey, 'idle', 'PX', ms);
  }

  async append(point: StoredPoint): Promise<boolean> {
    const results = await this.redis
      .pipeline()
      .xadd(this.key, 'MAXLEN', '~', this.maxPoints, `${point.t}-0`, 'p', JSON.stringify(point.sales))
      .pexpire(this.key, this.ttlMs)
      .exec();
    const error = results?.[0]?.[0];
    if (!error) return true;
    if (/equal or smaller/i.test(error.message)) return false; // that second was written already
    throw error;
  }

  async read(since: number): Promise<StoredPoint[]> {
    const entries = await this.redis.xrange(this.key, String(since), '+');
    const points: StoredPoint[] = [];
    for (const [id, fields] of entries) {
      const t = Number(id.split('-')[0]);
      const at = fields.indexOf('p');
      const json = at >= 0 ? fields[at + 1] : undefined;
      if (!json || !Number.isFinite(t)) continue;
      try {
        points.push({ t, sales: JSON.parse(json) as StoredPoint['sales'] });
      } catch {
        // not ours: skipped rather than breaking the page
      }
    }
    return points;
  }
}
