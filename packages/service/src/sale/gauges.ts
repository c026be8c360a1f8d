import { bounded } from '../support/bounded.js';
import { Gauge, type Registry } from 'prom-client';
import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from './context/context.js';
import { gaugesReaderKey, ORDER_GROUP } from './keys.js';
import { LayoutCache, layoutKeys } from './shards/layout.js';
import type { Database } from './store/db.js';
import { queries } from './store/queries.js';

const gaugesScript = loadLuaScript(new URL('./gauges.lua', import.meta.url));
const readerScript = loadLuaScript(new URL('./gauges-reader.lua', import.meta.url));

/** What one scrape learnt about one sale (a split sale's parts summed). */
export interface SaleReading {
  readonly sale: string;
  /** Units Redis still offers; null when the sale (or one of its parts) is not in Redis. */
  readonly left: number | null;
  /** The sale has not ended (its `open` or `not-before` key exists in Redis). */
  readonly open: boolean;
  /** Stream entries not recorded yet (delivered and unacknowledged, or undelivered). */
  readonly unrecorded: number;
  /** Age of the oldest unrecorded entry, s (Redis's clock); 0 when there is none. */
  readonly oldestUnrecordedSeconds: number;
  readonly deadLetters: number;
  /** Units debited from a part by transfers not finished yet (0 for a one-part sale). */
  readonly unitsInFlight: number;
  /** Pending transfers between the parts (0 for a one-part sale). */
  readonly transfersInFlight: number;
  /** The record: units the sale offers in all, and units held by recorded orders (absent: unknown). */
  readonly stock?: number;
  readonly recorded?: number;
}

/** One scrape's reading: which dependency answered, and the sales shown. */
export interface GaugeSnapshot {
  readonly redis: boolean;
  readonly database: boolean;
  readonly sales: readonly SaleReading[];
  /** This process holds the readers' lease (always, without `readerId`): it shows the sales. */
  readonly exposes: boolean;
}

export interface SaleGaugeDeps {
  context: SaleContext;
  db: Database;
  /** Layouts of split sales. @default Redis's */
  layouts?: LayoutCache;
  /** Sales read at most per scrape: the newest ids of the active set. @default 50 */
  maxSales?: number;
  /** Redis and the record each have this long to answer, ms; then the scrape goes on without them. @default 1000 */
  timeoutMs?: number;
  /**
   * This process's instance id, when several serves read the same sales: only the holder of a lease
   * in Redis (gauges-reader.lua, `readerLeaseMs`) exposes the per-sale series, so each sale has one
   * series however many serves are scraped. Without it the process always exposes them.
   */
  readerId?: string;
  /** How long the lease outlives its holder's last reading, ms. @default 5000 */
  readerLeaseMs?: number;
}

type GaugesReply = [number, number, number, string, number, number, number, number];

/**
 * Reads the gauges of the sales `/metrics` shows: the newest `maxSales` ids of the active set, one
 * gauges.lua call per sale (per part for a split sale; the calls of one scrape leave together) and
 * one query of the record by primary key for all of them. A sale that has ended is left out once
 * nothing of it is left to record (no unrecorded entry, no transfer in flight), so its series go;
 * until then an operator still sees its backlog drain. Never throws: a dependency that fails or does
 * not answer within `timeoutMs` is reported down and its gauges are absent.
 */
export async function readSaleGauges(deps: SaleGaugeDeps): Promise<GaugeSnapshot> {
  const { prefix, redis, scripts, keys } = deps.context;
  const timeoutMs = deps.timeoutMs ?? 1000;
  const layouts = deps.layouts ?? new LayoutCache(deps.context);

  const ids = await bounded(redis.smembers(keys.activeSales), timeoutMs).then(
    (members) => newest(members, deps.maxSales ?? 50),
    () => undefined,
  );
  const [live, record, exposes] = await Promise.all([
    ids === undefined
      ? Promise.resolve(undefined)
      : bounded(Promise.all(ids.map((id) => readSale(scripts, layouts, id, prefix))), timeoutMs).catch(
          () => undefined,
        ),
    // Runs with no ids, too: then it is the database's probe.
    bounded(
      deps.db.query<{ id: string; stock: number; sold: number }>(queries.saleGauges, [ids ?? []]),
      timeoutMs,
    )
      .then(({ rows }) => new Map(rows.map((row) => [row.id, row])))
      .catch(() => undefined),
    deps.readerId === undefined
      ? Promise.resolve(true)
      : bounded(
          scripts.run(readerScript, [gaugesReaderKey(prefix)], [deps.readerId, deps.readerLeaseMs ?? 5000]),
          timeoutMs,
        ).then(
          (held) => held === 1,
          () => false,
        ),
  ]);
  const sales = (live ?? [])
    .filter(
      (sale) => sale.open || sale.unrecorded > 0 || sale.transfersInFlight > 0 || sale.unitsInFlight > 0,
    )
    .map((sale) => {
      const row = record?.get(sale.sale);
      return row ? { ...sale, stock: Number(row.stock), recorded: Number(row.sold) } : sale;
    });
  return { redis: live !== undefined, database: record !== undefined, sales, exposes };
}

/** The newest `max` sale ids (identity numbers: larger is newer). */
function newest(ids: readonly string[], max: number): string[] {
  const valid = ids.filter((id) => /^\d{1,19}$/.test(id));
  valid.sort((a, b) => (BigInt(a) < BigInt(b) ? 1 : BigInt(a) > BigInt(b) ? -1 : 0));
  return valid.slice(0, max);
}

async function readSale(
  scripts: ScriptRunner,
  layouts: LayoutCache,
  saleId: string,
  prefix: string,
): Promise<SaleReading> {
  const parts = layoutKeys(await layouts.get(saleId), prefix);
  const replies = await Promise.all(
    parts.map(
      async (keys) =>
        (await scripts.run(
          gaugesScript,
          [keys.stock, keys.open, keys.notBefore, keys.stream, keys.dead, keys.inflight, keys.transfers],
          [ORDER_GROUP],
        )) as GaugesReply,
    ),
  );
  const sum = (index: 2 | 5 | 6 | 7) => replies.reduce((total, reply) => total + Number(reply[index]), 0);
  const ages = replies.map(([, , , oldest, nowMs]) =>
    oldest ? Math.max(0, nowMs - Number(oldest.split('-')[0])) / 1000 : 0,
  );
  return {
    sale: saleId,
    left: replies.every((reply) => reply[0] >= 0)
      ? replies.reduce((total, reply) => total + reply[0], 0)
      : null,
    open: replies.some((reply) => reply[1] === 1),
    unrecorded: sum(2),
    oldestUnrecordedSeconds: Math.max(0, ...ages),
    deadLetters: sum(5),
    unitsInFlight: sum(6),
    transfersInFlight: sum(7),
  };
}

/** Every per-sale gauge: name, help, and its value in a reading (undefined: no series for that sale). */
const SALE_GAUGES: ReadonlyArray<[string, string, (sale: SaleReading) => number | undefined]> = [
  ['lockstock_sale_units_left', 'Units the sale still offers, as Redis counts them (a split sale: all parts)', (s) => s.left ?? undefined],
  [
    'lockstock_sale_units_reserved',
    'Units held by reservations, as Redis counts them: the stock less what is left and what transfers carry',
    (s) => (s.left === null || s.stock === undefined ? undefined : s.stock - s.left - s.unitsInFlight),
  ],
  ['lockstock_sale_units_recorded', 'Units held by orders the record has (confirmed and paid)', (s) => s.recorded],
  ['lockstock_sale_unrecorded_entries', 'Stream entries (reservations, order events) the order pipeline has not recorded yet', (s) => s.unrecorded],
  [
    'lockstock_sale_oldest_unrecorded_seconds',
    "Age of the sale's oldest unrecorded stream entry, by Redis's clock (0: nothing waits)",
    (s) => s.oldestUnrecordedSeconds,
  ],
  ['lockstock_sale_dead_letters', "Entries in the sale's dead-letter streams (the pipeline gave up on them)", (s) => s.deadLetters],
  [
    'lockstock_sale_transfers_in_flight',
    'Transfers of units between the parts of a split sale, debited and not finished yet (0 for a sale of one part)',
    (s) => s.transfersInFlight,
  ],
  [
    'lockstock_sale_transfer_units_in_flight',
    'Units those transfers carry (debited from one part, not yet credited to another)',
    (s) => s.unitsInFlight,
  ],
]; // prettier-ignore

export interface SaleGaugeRefresh {
  /** A reading starts this often, ms (the next waits for the last to end). @default 1000 */
  refreshMs?: number;
  /** Told each reading (which dependency answered) and when it began, ms: the dependency log listens. */
  onReading?: (reading: GaugeSnapshot, startedAt: number) => void;
}

/**
 * Registers the per-sale gauges (label `sale`) and the dependency gauges in `registry`, from readings
 * taken in the background (readSaleGauges, every `refreshMs`), never at scrape time: a scrape answers
 * from memory at once whatever Redis and the record do. A Redis that hangs once held every scrape
 * for its 1 s timeout, and Prometheus, scraping every second, timed the scrapes out: the target
 * went down instead of reporting Redis down, and LockstockRedisDown never fired (issue 47).
 * `lockstock_sale_metrics_age_seconds` says how old the reading is; a reading older than three
 * timeouts (one hung past its bounds) reports both dependencies down. Every `serve` process reads
 * the same sales; with `readerId`, only the holder of the readers' lease exposes them (one series
 * per sale; the dashboard and the rules still take max() by sale, which joins the series across a
 * change of holder, when they move from one instance label to another).
 * Returns the readings' handle: `stop()`, and `fresh()`, which resolves once a reading begun after
 * the call has ended (tests; what a scrape shows then is at least that new).
 */
export function registerSaleGauges(
  registry: Registry,
  deps: SaleGaugeDeps & SaleGaugeRefresh,
): { stop(): Promise<void>; fresh(): Promise<void> } {
  const refreshMs = deps.refreshMs ?? 1000;
  const staleMs = 3 * (deps.timeoutMs ?? 1000) + refreshMs;
  const started = Date.now();
  let last: { reading: GaugeSnapshot; at: number } | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  // Waiters of fresh(), for the next reading to start: each resolves at its end.
  let pending: Array<() => void> = [];
  const refresh = () => {
    const done = pending;
    pending = [];
    const startedAt = Date.now();
    inFlight = readSaleGauges(deps).then((reading) => {
      last = { reading, at: Date.now() };
      inFlight = undefined;
      deps.onReading?.(reading, startedAt);
      for (const resolve of done) resolve();
      if (!stopped) timer = setTimeout(refresh, refreshMs).unref();
    });
  };
  refresh();
  const current = (): GaugeSnapshot | undefined => {
    if (!last) return undefined;
    if (Date.now() - last.at > staleMs) return { redis: false, database: false, sales: [], exposes: false };
    return last.reading;
  };

  new Gauge({
    name: 'lockstock_sale_metrics_age_seconds',
    help: 'Age of the reading the per-sale and dependency gauges show, s (read in the background every second; growing: the reads hang)',
    registers: [registry],
    collect() {
      this.set((Date.now() - (last?.at ?? started)) / 1000);
    },
  });
  new Gauge({
    name: 'lockstock_sale_metrics_up',
    help: "1 when the last reading got the sales' gauges from Redis; 0 when Redis failed or did not answer within 1 s (the per-sale gauges are then absent)",
    registers: [registry],
    collect() {
      const reading = current();
      if (reading) this.set(reading.redis ? 1 : 0);
    },
  });
  new Gauge({
    name: 'lockstock_dependency_up',
    help: 'Whether a dependency answered the last reading within 1 s (redis, database), probed by the per-sale reads',
    labelNames: ['dependency'] as const,
    registers: [registry],
    collect() {
      const reading = current();
      if (!reading) return;
      this.set({ dependency: 'redis' }, reading.redis ? 1 : 0);
      this.set({ dependency: 'database' }, reading.database ? 1 : 0);
    },
  });
  for (const [name, help, value] of SALE_GAUGES) {
    new Gauge({
      name,
      help,
      labelNames: ['sale'] as const,
      registers: [registry],
      collect() {
        // Only the sales of this reading: an ended sale's series go.
        this.reset();
        const reading = current();
        if (!reading?.exposes) return; // another serve holds the readers' lease: it shows them
        for (const sale of reading.sales) {
          const v = value(sale);
          if (v !== undefined) this.set({ sale: sale.sale }, v);
        }
      },
    });
  }
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
      for (const resolve of pending) resolve();
    },
    fresh() {
      if (stopped) return Promise.resolve();
      return new Promise<void>((resolve) => {
        pending.push(resolve);
        if (inFlight) return;
        clearTimeout(timer); // between readings: the next one starts now
        refresh();
      });
    },
  };
}
