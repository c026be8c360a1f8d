import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import {
  inSpan,
  ROOT_CONTEXT,
  SpanKind,
  traceparentOf,
  tracingOn,
  type Context,
} from '../support/tracing.js';
import type { SaleContext } from './context/context.js';
import { isRecordId } from './ids/canonical.js';
import { actOnOrder } from './lifecycle/actions.js';
import { OrderSettler } from './lifecycle/settle.js';
import type { SaleMetrics } from './metrics.js';
import { SaleRecoveringError } from './recovering.js';
import type { SaleGate } from './recovery/monitor.js';
import { reservationLabel } from './outcomes.js';
import { Reserver, SOLD_OUT, type ReserveRequest } from './reserve.js';
import { isSplit, layoutKeys, layoutOf } from './shards/layout.js';
import { placeParts } from './shards/placement.js';
import { recordLayouts } from './shards/record-layouts.js';
import { SplitSales } from './shards/split-sale.js';
import { validateSaleRoom } from './room/settings.js';
import { RoomStore } from './room/store.js';
import { SoldOutCache } from './sold-out.js';
import { lineArgs, recordedLine, Waitlist } from './waitlist/waitlist.js';
import { DEFAULT_OFFER_MS, validOfferMs } from './waitlist/settings.js';
import type { Database } from './store/db.js';
import { records } from './store/records.js';
import type {
  NewSale,
  Order,
  OrderAction,
  OrderActionResult,
  Reservation,
  Sale,
  SaleStatus,
  SaleView,
} from './types.js';
import { purchasesNotBefore } from './keys.js';
import { createGroup } from './redis.js';
import type { BeaconChain } from './raffle/beacon.js';
import { validateNewSale } from './new-sale.js';

const warmScript = loadLuaScript(new URL('./warm-sale.lua', import.meta.url));

export interface SaleServiceDeps {
  /** The process's sale context (context/context.ts): Redis, keys, scripts. */
  context: SaleContext;
  db: Database;
  /** Order ids without a round trip (SnowflakeIdGenerator.next). */
  nextOrderId: () => string;
  metrics?: SaleMetrics;
  /**
   * Answer attempts on a sold-out sale from memory until units come back (see SoldOutCache; it holds
   * one subscriber connection, closed by `close()`). @default true
   */
  soldOutCache?: boolean;
  /** See ReserverOptions.batchWritesPerPhase: on for HTTP servers. @default false */
  batchWritesPerPhase?: boolean;
  /**
   * Asked before a sale is sold or an order settled: a sale Redis lost or forgot part of is not sold
   * until it is rebuilt from the record (RecoveryMonitor). None: everything is admitted (tests, tools).
   */
  gate?: SaleGate;
  /** How long an offer to a waitlisted buyer holds its unit, ms (waitlist/). @default DEFAULT_OFFER_MS */
  waitlistOfferMs?: number;
  /** The drand chain new raffles fix in their commitment (raffle/beacon.ts); none: commit–reveal only. */
  beacon?: BeaconChain;
}

/**
 * The flash sale: PostgreSQL holds sales and orders (the record), Redis holds the hot stock and the
 * reservation rule (reserve.lua), the order pipeline moves reservations from one to the other.
 */
export class SaleService {
  private readonly reserver: Reserver;
  private readonly scripts: ScriptRunner;
  private readonly soldOut: SoldOutCache | undefined;
  private readonly settler: OrderSettler;
  /** Layouts of split sales, from Redis or else the record. */
  readonly layouts: ReturnType<typeof recordLayouts>;
  /** Split sales' warming and counts (shards/split-sale.ts). */
  private readonly splitSales: SplitSales;
  /** Sales' waiting rooms (room/): the record's and Redis's, remembered per sale. */
  readonly rooms: RoomStore;
  /** First-come sales' waitlists (waitlist/): units that come back go to the line in join order. */
  readonly waitlist: Waitlist;
  /** How long an offer to a waitlisted buyer holds its unit, ms. */
  private readonly offerMs: number;

  constructor(private readonly deps: SaleServiceDeps) {
    const { context } = deps;
    this.soldOut = deps.soldOutCache === false ? undefined : new SoldOutCache(context);
    this.layouts = recordLayouts(context, deps.db);
    this.rooms = new RoomStore(context, deps.db);
    const transferWait = deps.metrics?.transferWait;
    this.reserver = new Reserver(context, deps.nextOrderId, {
      ...(this.soldOut ? { soldOut: this.soldOut } : {}),
      batchWritesPerPhase: deps.batchWritesPerPhase ?? false,
      ...(transferWait
        ? { onTransferWait: (seconds, outcome) => transferWait.observe({ outcome }, seconds) }
        : {}),
    });
    this.scripts = context.scripts;
    this.splitSales = new SplitSales(context, this.layouts);
    this.offerMs = validOfferMs(deps.waitlistOfferMs ?? DEFAULT_OFFER_MS);
    this.settler = new OrderSettler(context, this.layouts, this.offerMs);
    this.waitlist = new Waitlist({
      context,
      db: deps.db,
      nextOrderId: deps.nextOrderId,
      layouts: this.layouts,
      offerMs: this.offerMs,
      ...(deps.gate ? { gate: deps.gate } : {}),
    });
  }

  /** Moves units between the parts of split sales (its background finishes can be awaited: `settled`). */
  get transfers() {
    return this.reserver.transfers;
  }

  /** Closes what the service opened itself (the sold-out cache's subscriber connection). */
  async close(): Promise<void> {
    await this.soldOut?.close();
  }

  /**
   * Records the sale, then pre-warms its stock in Redis and opens its order stream. A sale of
   * `shards` > 1 parts is placed first (shards/placement.ts), in the transaction that records it.
   */
  async createSale(input: NewSale): Promise<SaleView> {
    const { shards, ...sale } = validateNewSale(input, this.deps.beacon);
    const room = validateSaleRoom(input, shards);
    const created =
      shards > 1 || room
        ? await this.deps.db.transaction(async (tx) => {
            const row = await records.insertSale(tx, sale);
            if (room) await this.rooms.record(tx, row.id, room);
            if (shards === 1) return row;
            const { tags } = await placeParts(this.deps.context.redis, row.id, shards);
            await records.setPartTags(tx, row.id, tags);
            return { ...row, partTags: tags };
          })
        : await records.insertSale(this.deps.db, sale);
    // The room before the stock: a sale Redis can sell always has its room there already.
    if (room) await this.rooms.open(created.id, { ...room, openAt: created.startsAt.getTime() });
    else await this.rooms.openNone(created.id);
    await this.warm(created, created.stock, { line: false });
    return { ...view(created, created.stock), ...(room ? { room } : {}) };
  }

  /**
   * Loads a recorded sale into Redis if it is not there (a new sale, or Redis lost its data; then
   * `remaining` should be the stock minus what the database recorded). Never resets a sale Redis has.
   * A sale Redis lost gets its recorded waitlist back in the same step, its units offered to the line
   * first (warm-sale.lua); `line: false` (a new sale: nobody waits yet) skips reading the record.
   */
  async warm(sale: Sale, remaining: number, options: { line?: boolean } = {}): Promise<boolean> {
    if (sale.partTags) return this.splitSales.warm(sale, layoutOf(sale.id, sale.partTags), remaining);
    const keys = this.deps.context.keys.sale(sale.id);
    // Read only when Redis lacks the sale (the script decides again, atomically).
    const line =
      options.line !== false && (await this.deps.context.redis.exists(keys.stock)) === 0
        ? await recordedLine(this.deps.db, sale.id)
        : undefined;
    const { stock, notBefore, open, legacyMeta, restock, buyers, waitlist, offers } = keys;
    const warmed = await this.scripts.run(
      warmScript,
      [stock, notBefore, open, legacyMeta, restock, buyers, waitlist, offers],
      // A sale that has started needs no not-before key (and must not get one that outlives "now"
      // by the few ms Redis's cached clock may lag ours).
      [
        purchasesNotBefore(sale),
        sale.endsAt.getTime(),
        sale.perUserLimit,
        remaining,
        ...lineArgs(line, this.offerMs),
      ],
    );
    await createGroup(this.deps.context.redis, keys.stream);
    await this.deps.context.redis.sadd(this.deps.context.keys.activeSales, sale.id);
    return warmed === 1;
  }

  async getSale(id: string): Promise<SaleView | undefined> {
    if (!isRecordId(id)) return undefined; // "0001" is not sale 1 (its Redis keys would be another sale's)
    const sale = await records.getSale(this.deps.db, id);
    if (!sale) return undefined;
    if (sale.partTags) return view(sale, await this.splitSales.remaining(sale));
    const remaining = await this.deps.context.redis.get(this.deps.context.keys.sale(id).stock);
    return view(sale, remaining === null ? sale.stock - sale.persistedSold : Number(remaining));
  }

  /**
   * A page of sales, newest first, with their stock and status as `getSale` gives them. `status` is
   * decided per sale (sold out is Redis's word), so a page narrowed to active or sold-out sales may
   * hold fewer than `limit`; `next` (the last id looked at) continues after it, until undefined.
   */
  async listSales(query: {
    status?: SaleStatus;
    before?: string;
    limit: number;
  }): Promise<{ sales: SaleView[]; next: string | undefined }> {
    const window =
      query.status === undefined
        ? undefined
        : query.status === 'scheduled' || query.status === 'ended'
          ? query.status
          : 'open';
    const rows = await records.listSales(this.deps.db, { before: query.before, window, limit: query.limit });
    // One GET per sale, not an MGET: each sale's keys live on their own Cluster slot.
    const stocks = await Promise.all(
      rows.map((sale) =>
        sale.partTags
          ? this.splitSales.remaining(sale).then(String)
          : this.deps.context.redis.get(this.deps.context.keys.sale(sale.id).stock),
      ),
    );
    const sales = rows
      .map((sale, i) => {
        const remaining = stocks[i];
        return view(sale, remaining == null ? sale.stock - sale.persistedSold : Number(remaining));
      })
      .filter((sale) => query.status === undefined || sale.status === query.status);
    return { sales, next: rows.length === query.limit ? rows[rows.length - 1]?.id : undefined };
  }

  async listOpenSales(): Promise<Array<Sale & { persistedSold: number }>> {
    return records.listOpenSales(this.deps.db);
  }

  /**
   * Warms every open sale Redis does not have (at startup); returns the ids warmed now. Each sale's
   * room (or "no room" marker) is written from the record first: a sale Redis can sell always has it.
   */
  async warmOpenSales(): Promise<string[]> {
    const warmed: string[] = [];
    for (const sale of await this.listOpenSales()) {
      await this.rooms.restore(sale.id);
      if (await this.warm(sale, sale.stock - sale.persistedSold)) warmed.push(sale.id);
    }
    return warmed;
  }

  /**
   * One purchase attempt (see reserve.lua for the rule). Throws SaleRecoveringError (a 503) while the
   * sale is being rebuilt from the record, and for a sale the record has open but Redis does not: it
   * was lost, and its rebuild starts now — never "no such sale". `trace`: the caller's trace context
   * (the HTTP request's), the reservation span's parent when tracing is on.
   */
  async buy(request: ReserveRequest, trace?: Context): Promise<Reservation> {
    if (!tracingOn()) return this.reserve(request);
    // In a CLIENT span of the reservation script, whose traceparent the script keeps in the stream
    // entry: the order pipeline's recording of it joins this trace (support/tracing.ts).
    const attributes = {
      'db.system.name': 'redis',
      'db.operation.name': 'EVALSHA',
      'lockstock.sale.id': request.saleId,
      'lockstock.quantity': request.quantity,
    };
    const parent = trace ?? ROOT_CONTEXT;
    return inSpan('lockstock.sale.reserve', SpanKind.CLIENT, attributes, parent, async (span) => {
      const traceparent = traceparentOf(span);
      const result = await this.reserve(traceparent ? { ...request, traceparent } : request);
      span.setAttribute('lockstock.outcome', reservationLabel(result));
      if (result.ok) span.setAttribute('lockstock.order.id', result.orderId);
      return result;
    });
  }

  /** The one purchase flow, traced or not: the recovery gate, the reservation script, the count. */
  private async reserve(request: ReserveRequest): Promise<Reservation> {
    const gate = this.deps.gate;
    const admitted = gate?.admit(request.saleId);
    if (admitted) await admitted;
    const result = await this.reserver.reserve(request).catch((e: unknown) => this.rooms.rethrow(e));
    if (!result.ok && result.code === 'not_found' && gate?.missing(request.saleId)) {
      throw new SaleRecoveringError(request.saleId);
    }
    return this.counted(result);
  }

  /**
   * The sold-out fast path for callers that can answer before doing anything else (the HTTP route
   * answers before it even reads the body or checks the token): a sold-out refusal, counted, if this
   * process knows the sale has no unit left (see SoldOutCache); undefined otherwise.
   */
  refuseFromMemory(saleId: string): Reservation | undefined {
    return this.soldOut?.isSoldOut(saleId) ? this.counted(SOLD_OUT) : undefined;
  }

  private counted(result: Reservation): Reservation {
    const tally = this.deps.metrics?.reservationTally;
    if (tally) {
      const outcome = reservationLabel(result);
      tally.set(outcome, (tally.get(outcome) ?? 0) + 1);
    }
    return result;
  }

  /**
   * An order: as recorded (with the final state Redis settled it in, which the record shows moments
   * later), or `reserved` while it still waits in a sale's stream (looked up among the newest
   * `RESERVED_LOOKUP_DEPTH` entries of each open sale: the pipeline records orders within moments, and
   * a reservation pays for no index of its own).
   */
  async getOrder(orderId: string): Promise<Order | undefined> {
    if (!isRecordId(orderId)) return undefined;
    const recorded = await records.getOrder(this.deps.db, orderId);
    if (recorded) return this.withSettledState(recorded);
    for (const saleId of await this.deps.context.redis.smembers(this.deps.context.keys.activeSales)) {
      const layout = await this.layouts.get(saleId);
      const streams = isSplit(layout)
        ? layoutKeys(layout, this.deps.context.prefix).map((keys) => keys.stream)
        : [this.deps.context.keys.sale(saleId).stream];
      for (const stream of streams) {
        const entries = (await this.deps.context.redis.xrevrange(
          stream,
          '+',
          '-',
          'COUNT',
          RESERVED_LOOKUP_DEPTH,
        )) as Array<[string, string[]]>;
        for (const [, fields] of entries) {
          const entry = toFieldMap(fields);
          if (entry.order !== orderId || entry.event !== undefined) continue;
          return {
            orderId,
            saleId,
            userId: String(entry.user),
            quantity: Number(entry.qty),
            status: 'reserved',
          };
        }
      }
    }
    // A reservation recorded between the two lookups is in the database now.
    const late = await records.getOrder(this.deps.db, orderId);
    return late && this.withSettledState(late);
  }

  private async withSettledState(order: Order): Promise<Order> {
    if (order.status !== 'confirmed') return order;
    const settled = await this.settler.settledState(order.saleId, order.orderId, order.userId);
    return settled ? { ...order, status: settled } : order;
  }

  /**
   * A buyer pays or cancels one of their orders (both idempotent). Refused when the order's state
   * forbids it (paying an expired or cancelled order, cancelling a paid one), while it is still being
   * recorded (`order_pending`: retry in a moment), or when it is not the caller's (`not_found`).
   */
  async act(orderId: string, userId: string, action: OrderAction): Promise<OrderActionResult> {
    const order = await this.getOrder(orderId);
    const admitted = order && this.deps.gate?.admit(order.saleId);
    if (admitted) await admitted;
    return actOnOrder(this.settler, order, userId, action);
  }
}

/** How far back getOrder looks for reservations not yet recorded. */
export const RESERVED_LOOKUP_DEPTH = 10_000;

export function toFieldMap(fields: string[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) map[fields[i] as string] = fields[i + 1] as string;
  return map;
}

export function statusOf(sale: Sale, remaining: number, now = Date.now()): SaleStatus {
  if (now < sale.startsAt.getTime()) return 'scheduled';
  if (now >= sale.endsAt.getTime()) return 'ended';
  return remaining <= 0 ? 'sold_out' : 'active';
}

function view(sale: Sale, remaining: number): SaleView {
  return {
    id: sale.id,
    name: sale.name,
    stock: sale.stock,
    perUserLimit: sale.perUserLimit,
    startsAt: sale.startsAt,
    endsAt: sale.endsAt,
    ...(sale.payWithinSeconds === undefined ? {} : { payWithinSeconds: sale.payWithinSeconds }),
    ...(sale.partTags ? { partTags: sale.partTags } : {}),
    ...(sale.admission ? { admission: sale.admission } : {}),
    remaining,
    sold: sale.stock - remaining,
    status: statusOf(sale, remaining),
    shards: sale.partTags?.length ?? 1,
  };
}
