import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import { sqlIn } from '../../support/assets.js';
import type { SaleContext } from '../context/context.js';
import { ID_PATTERN, IDEMPOTENCY_TTL_SECONDS, type SaleKeys } from '../keys.js';
import { SaleRecoveringError } from '../recovering.js';
import { isSplit, LayoutCache } from '../shards/layout.js';
import type { Queryable } from '../store/db.js';
import { DEFAULT_OFFER_MS, validOfferMs } from './settings.js';

const scripts = {
  join: loadLuaScript(new URL('./lua/join.lua', import.meta.url)),
  standing: loadLuaScript(new URL('./lua/standing.lua', import.meta.url)),
  buy: loadLuaScript(new URL('./lua/buy.lua', import.meta.url)),
  leave: loadLuaScript(new URL('./lua/leave.lua', import.meta.url)),
};

/** The fenced rebuild step that keeps a sale's offers within what the record leaves (recovery/). */
export const rebuildOffersScript = loadLuaScript(new URL('./lua/rebuild-offers.lua', import.meta.url));
/** The fenced rebuild step that puts the recorded line back and hands units to it (recovery/). */
export const rebuildLineScript = loadLuaScript(new URL('./lua/rebuild-line.lua', import.meta.url));

const sql = sqlIn(new URL('./sql/', import.meta.url));
const queries = {
  recordJoin: sql('record-join'),
  recordLeave: sql('record-leave'),
  recordedLine: sql('recorded-line'),
};

/** One buyer of a sale's recorded line: their place (Redis's score) and id. */
export interface LinePlace {
  readonly seq: string;
  readonly userId: string;
}

/**
 * A sale's waitlist as the record has it, in line order (sql/recorded-line.sql): what a rebuild or a
 * warm puts back into Redis. Throws when the record cannot be read (the sale then stays unsold).
 */
export async function recordedLine(db: Queryable, saleId: string): Promise<LinePlace[]> {
  const { rows } = await db.query<{ user_id: string; seq: string }>(queries.recordedLine, [saleId]);
  return rows.map((row) => ({ seq: row.seq, userId: row.user_id }));
}

/** warm-sale.lua's waitlist arguments: the offer window and the line's pairs; '' for no line (a new sale). */
export function lineArgs(line: readonly LinePlace[] | undefined, offerMs: number): Array<string | number> {
  return line ? [offerMs, ...line.flatMap((place) => [place.seq, place.userId])] : [''];
}

/** Where a buyer stands in a sale's waitlist. */
export type WaitlistStanding =
  | { readonly state: 'none' }
  | {
      readonly state: 'waiting';
      /** 1: the next unit that comes back is offered to this buyer */
      readonly position: number;
      /** Buyers in line, this one included. */
      readonly waiting: number;
    }
  | {
      readonly state: 'offered';
      /** When the offer ends (ms since epoch, on Redis's clock): buy before, or it passes on. */
      readonly offerExpiresAt: number;
    };

/** Why the waitlist refused (each maps to one HTTP status in http/errors.ts). */
export type WaitlistRefusalCode =
  | 'not_found'
  | 'not_started'
  | 'ended'
  | 'limit_reached'
  | 'not_sold_out'
  | 'waitlist_unavailable'
  | 'idempotency_key_reused'
  | 'no_offer'
  | 'offer_expired';

export type WaitlistRefusal = { readonly ok: false; readonly code: WaitlistRefusalCode };

/** An offer bought (`duplicate`: a repeated Idempotency-Key answered with its original order). */
export type OfferPurchase =
  { readonly ok: true; readonly orderId: string; readonly duplicate: boolean } | WaitlistRefusal;

const REFUSALS: Record<number, WaitlistRefusalCode> = {
  [-1]: 'not_found',
  [-2]: 'not_started',
  [-3]: 'ended',
  [-5]: 'limit_reached',
  [-6]: 'idempotency_key_reused',
  [-13]: 'not_sold_out',
  [-14]: 'no_offer',
  [-15]: 'offer_expired',
};
const RECOVERING = -8;
/** join.lua: the buyer may join; record the join and ask again with its place. */
const MAY_JOIN = -20;

/** Asked before a sale is touched: the recovery gate (recovery/monitor.ts's SaleGate, by shape). */
export interface WaitlistGate {
  admit(saleId: string): Promise<void> | undefined;
  missing(saleId: string): boolean;
}

export interface WaitlistDeps {
  /** The process's sale context (context/context.ts): Redis, keys, scripts. */
  context: SaleContext;
  /** The record: every join and leave is written here before Redis, so a rebuild has the line. */
  db: Queryable;
  /** Order ids without a round trip (SnowflakeIdGenerator.next). */
  nextOrderId: () => string;
  /** How long an offer holds its unit, ms. @default DEFAULT_OFFER_MS */
  offerMs?: number;
  gate?: WaitlistGate;
  /** Where split sales are recognised (they have no waitlist). @default Redis's layout keys */
  layouts?: LayoutCache;
}

/**
 * The waitlist of a first-come sale of one part (lua/): a buyer told "sold out" joins; a unit that
 * comes back (a cancellation, an expiry: lifecycle/settle-core.lua) is held apart from the stock as a
 * time-limited offer to the head of the line; the offered buyer buys it in one script step; an offer
 * that ends passes to the next (the expiry sweeper, or the next purchase of an offer). Redis decides
 * (every key under the sale's hash tag); the record keeps each join and leave, written first (a
 * record that cannot be written refuses the join with a 503), so a Redis that loses the sale gets its
 * line back with the stock, the units offered to its head (recovery/rebuild.ts, SaleService.warm).
 * Raffle sales have their own line (raffle/), split sales none.
 */
export class Waitlist {
  private readonly scripts: ScriptRunner;
  /** How long an offer holds its unit, ms (what reconcile's repair gives the offers it makes, too). */
  readonly offerMs: number;
  private readonly layouts: LayoutCache;

  constructor(private readonly deps: WaitlistDeps) {
    this.scripts = deps.context.scripts;
    this.offerMs = validOfferMs(deps.offerMs ?? DEFAULT_OFFER_MS);
    this.layouts = deps.layouts ?? new LayoutCache(deps.context);
  }

  /**
   * The buyer joins the line (or asks again: one place per buyer). Refused while units are on sale.
   * The join is recorded before Redis ranks it (see join.lua): a buyer told "waiting" is in the record.
   */
  async join(saleId: string, userId: string): Promise<WaitlistStanding | WaitlistRefusal> {
    const keys = await this.keysOf(saleId, userId);
    const run = async (seq: string) =>
      (await this.scripts.run(
        scripts.join,
        [keys.notBefore, keys.open, keys.stock, keys.recovering, keys.buyers, keys.waitlist, keys.offers],
        [userId, seq],
      )) as number | number[];
    let reply = await run('');
    if (reply === MAY_JOIN) {
      const { rows } = await this.deps.db.query<{ seq: string }>(queries.recordJoin, [saleId, userId]);
      reply = await run(String(rows[0]?.seq));
      // Refused since (a unit came back to the stock meanwhile): the record must not keep them waiting.
      if (!Array.isArray(reply)) await this.deps.db.query(queries.recordLeave, [saleId, userId]);
    }
    if (Array.isArray(reply)) return this.standingOf(reply);
    return this.refusal(saleId, reply);
  }

  /** Where the buyer stands now. */
  async standing(saleId: string, userId: string): Promise<WaitlistStanding> {
    const keys = await this.keysOf(saleId, userId);
    const reply = (await this.scripts.run(
      scripts.standing,
      [keys.waitlist, keys.offers],
      [userId],
    )) as number[];
    return this.standingOf(reply);
  }

  /** The buyer buys the unit offered to them (one unit; the same Idempotency-Key gets the same order). */
  async buy(
    saleId: string,
    userId: string,
    options: { idempotencyKey?: string; traceparent?: string } = {},
  ): Promise<OfferPurchase> {
    const keys = await this.keysOf(saleId, userId);
    const { idempotencyKey, traceparent } = options;
    if (idempotencyKey !== undefined && !ID_PATTERN.test(idempotencyKey)) {
      throw new TypeError('invalid idempotency key');
    }
    const orderId = this.deps.nextOrderId();
    const reply = (await this.scripts.run(
      scripts.buy,
      [
        keys.notBefore,
        keys.open,
        keys.stock,
        keys.recovering,
        keys.buyers,
        keys.stream,
        idempotencyKey === undefined ? keys.stock : keys.idempotency(userId, idempotencyKey),
        keys.waitlist,
        keys.offers,
        keys.restock,
      ],
      [
        userId,
        orderId,
        IDEMPOTENCY_TTL_SECONDS,
        idempotencyKey ?? '',
        this.offerMs,
        ...(traceparent ? [traceparent] : []),
      ],
    )) as number | string;
    if (reply === 1) return { ok: true, orderId, duplicate: false };
    if (typeof reply === 'string') return { ok: true, orderId: reply, duplicate: true };
    return this.refusal(saleId, reply);
  }

  /**
   * The buyer leaves the line, or declines the offer they hold (it passes on at once). Recorded first:
   * a rebuild never puts a buyer who left back in line.
   */
  async leave(saleId: string, userId: string): Promise<'left' | 'declined' | 'absent'> {
    const keys = await this.keysOf(saleId, userId);
    await this.deps.db.query(queries.recordLeave, [saleId, userId]);
    const reply = Number(
      await this.scripts.run(
        scripts.leave,
        [keys.stock, keys.open, keys.buyers, keys.recovering, keys.waitlist, keys.offers, keys.restock],
        [userId, this.offerMs],
      ),
    );
    if (reply === RECOVERING) throw new SaleRecoveringError(saleId);
    return reply === 1 ? 'left' : reply === 2 ? 'declined' : 'absent';
  }

  private async keysOf(saleId: string, userId: string): Promise<SaleKeys> {
    if (!ID_PATTERN.test(saleId) || !ID_PATTERN.test(userId)) throw new TypeError('invalid sale or user id');
    const admitted = this.deps.gate?.admit(saleId);
    if (admitted) await admitted;
    return this.deps.context.keys.sale(saleId);
  }

  private standingOf(reply: number[]): WaitlistStanding {
    const [state, a = 0, b = 0] = reply.map(Number);
    if (state === 1) return { state: 'waiting', position: a, waiting: b };
    if (state === 2) return { state: 'offered', offerExpiresAt: b };
    return { state: 'none' };
  }

  private async refusal(saleId: string, reply: number): Promise<WaitlistRefusal> {
    if (reply === RECOVERING) throw new SaleRecoveringError(saleId);
    if (reply === -1) {
      if (this.deps.gate?.missing(saleId)) throw new SaleRecoveringError(saleId);
      if (isSplit(await this.layouts.get(saleId))) return { ok: false, code: 'waitlist_unavailable' };
    }
    const code = REFUSALS[reply];
    if (!code) throw new Error(`unexpected waitlist script reply ${JSON.stringify(reply)}`);
    return { ok: false, code };
  }
}
