import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from './context/context.js';
import { ID_PATTERN, IDEMPOTENCY_TTL_SECONDS, type SaleKeys } from './keys.js';
import { roomKeys } from './room/keys.js';
import { AdmittedSplitPurchase } from './room/split-admission.js';
import { RoomMissingError, SaleRecoveringError } from './recovering.js';
import { LayoutCache, isSplit } from './shards/layout.js';
import { SplitReserver, type SplitSale, type TransferWaitOutcome } from './shards/split-reserver.js';
import { Transfers } from './shards/transfers.js';
import type { SoldOutCache } from './sold-out.js';
import type { RefusalCode, Reservation } from './types.js';
import { PhaseWriteBatcher } from './write-batch.js';
import { RateLimitedError } from './errors.js';
import { countUserAttempt, RATE_LIMITED } from './user-rate.js';

const reserveScript = loadLuaScript(new URL('./reserve.lua', import.meta.url));
const reserveLimitedScript = loadLuaScript(new URL('./reserve-limited.lua', import.meta.url));
const reserveIdempotentScript = loadLuaScript(new URL('./reserve-idempotent.lua', import.meta.url));
const reserveAdmittedScript = loadLuaScript(new URL('./reserve-admitted.lua', import.meta.url));
const idleScript = loadLuaScript(new URL('./room/lua/idle.lua', import.meta.url));

/**
 * The reservation scripts' refusal codes, in one place (-4, sold out with nothing left, is a table;
 * -8, the sale being recovered, is no refusal but a 503).
 */
const REFUSALS: Record<number, RefusalCode> = {
  [-1]: 'not_found',
  [-2]: 'not_started',
  [-3]: 'ended',
  [-5]: 'limit_reached',
  [-6]: 'idempotency_key_reused',
  [-7]: 'sold_out',
  [-9]: 'admission_used',
  [-10]: 'admission_not_yet',
  [-11]: 'admission_expired',
};
/** reserve-admitted.lua's answer for a sale whose room is not in Redis: a 503, never a sale without it. */
const ROOM_MISSING = -12;

/** A reservation request. Ids must match ID_PATTERN (the caller validates user input first). */
export interface ReserveRequest {
  saleId: string;
  userId: string;
  quantity: number;
  idempotencyKey?: string;
  /** The purchase's W3C traceparent when it is traced: kept in its stream entry (support/tracing.ts). */
  traceparent?: string;
  /**
   * A sale with a waiting room: the admitted-at of the buyer's signed admission. It is checked and
   * spent in the reservation's own step, on the Redis clock (one admission buys one order).
   */
  admittedAt?: number;
  /**
   * The per-user rate limit: attempts per second this user may make on this sale (counted on the Redis
   * clock, shared by every process; user-rate-core.lua). Over it, reserve throws RateLimitedError and
   * nothing is reserved. A plain purchase counts it in its reservation's own round trip
   * (reserve-limited.lua); the other paths in one more (user-rate.lua). None: no limit.
   */
  attemptsPerSecond?: number;
}

/** The scripts' answer while the sale is being rebuilt from the record (a 503, not a refusal). */
const RECOVERING = -8;
/** The scripts' answer for a sale they do not find: no such sale, or a split one. */
const NOT_FOUND = -1;

export const SOLD_OUT: Reservation = Object.freeze({ ok: false, code: 'sold_out' });
const REFUSED = Object.fromEntries(
  Object.entries(REFUSALS).map(([code, refusal]) => [code, Object.freeze({ ok: false, code: refusal })]),
) as Record<number, Reservation>;

export interface ReserverOptions {
  /** Answer sales known to be sold out from memory (see SoldOutCache). */
  soldOut?: SoldOutCache;
  /**
   * Hold reservations' socket writes to the end of the event loop's poll phase (PhaseWriteBatcher):
   * for servers, where each request is its own tick. Loops of callers resumed by batches of replies
   * are better off without it (holding them makes Redis wait in lockstep). @default false
   */
  batchWritesPerPhase?: boolean;
  /**
   * Where split sales' layouts are learnt. @default Redis's layout keys only: asked after a "no such
   * sale", so a flood of attempts on sales that do not exist must not reach the record.
   */
  layouts?: LayoutCache;
  /** Seconds a buyer of a split sale waited from finding its part dry to its answer (metrics). */
  onTransferWait?: (seconds: number, outcome: TransferWaitOutcome) => void;
  /** A transfer's background finish failed (it stays pending; the sweeper finishes it). */
  onTransferError?: (error: unknown) => void;
}

/** What the reservation scripts answer (see reserve.lua). */
type Reply = number | string | [number, number];

/** A script's [code, ms] table: sold out with nothing left (-4), or over the rate limit (-13). */
function tableReply(reply: [number, number]): 'rate_limited' | 'sold_out' {
  return Number(reply[0]) === RATE_LIMITED ? 'rate_limited' : 'sold_out';
}

/**
 * The reservation hot path: one script call, no lock. `nextOrderId` must not cost a round trip
 * (SnowflakeIdGenerator). Key lists are built once per sale. With a `SoldOutCache`, a sale known to
 * have no unit left is answered without Redis (requests with an Idempotency-Key still ask: a retry
 * must get its original order back).
 */
export class Reserver {
  private readonly scripts: ScriptRunner;
  private readonly batcher: PhaseWriteBatcher | undefined;
  private readonly keysBySale = new Map<
    string,
    { keys: SaleKeys; list: string[]; room: string[]; idle: string[]; split?: SplitSale }
  >();
  private readonly layouts: LayoutCache;
  private readonly split: SplitReserver;
  /** Moves units between the parts of split sales. */
  readonly transfers: Transfers;
  private readonly admittedSplit: AdmittedSplitPurchase;

  private readonly soldOut: SoldOutCache | undefined;

  private readonly keyPrefix: string;

  constructor(
    private readonly sale: SaleContext,
    private readonly nextOrderId: () => string,
    options: ReserverOptions = {},
  ) {
    this.scripts = sale.scripts;
    this.keyPrefix = sale.prefix;
    this.soldOut = options.soldOut;
    this.batcher = options.batchWritesPerPhase ? new PhaseWriteBatcher(sale.redis) : undefined;
    this.layouts = options.layouts ?? new LayoutCache(sale);
    this.transfers = new Transfers(sale.redis, this.scripts, nextOrderId, options.onTransferError);
    this.admittedSplit = new AdmittedSplitPurchase(sale.redis, this.scripts, sale.prefix);
    this.split = new SplitReserver(this.scripts, this.transfers, {
      ...(this.soldOut ? { soldOut: this.soldOut } : {}),
      ...(this.batcher ? { beforeCall: () => this.batcher?.hold() } : {}),
      ...(options.onTransferWait ? { onTransferWait: options.onTransferWait } : {}),
    });
  }

  private keysOf(saleId: string) {
    let entry = this.keysBySale.get(saleId);
    if (!entry) {
      if (this.keysBySale.size >= 1024) this.keysBySale.clear();
      const keys = this.sale.keys.sale(saleId);
      const room = roomKeys(saleId, this.keyPrefix);
      entry = {
        keys,
        list: [keys.notBefore, keys.open, keys.stock, keys.buyers, keys.stream, keys.recovering],
        room: [room.config, room.admitted, room.spent, room.active],
        idle: [room.admitted, room.active],
      };
      this.keysBySale.set(saleId, entry);
    }
    return entry;
  }

  async reserve(request: ReserveRequest): Promise<Reservation> {
    const { saleId, userId, quantity, idempotencyKey } = request;
    if (!ID_PATTERN.test(saleId) || !ID_PATTERN.test(userId)) throw new TypeError('invalid sale or user id');
    if (!Number.isSafeInteger(quantity) || quantity < 1)
      throw new TypeError('quantity must be a positive integer');
    const soldOut = this.soldOut;
    const entry = this.keysOf(saleId);
    const perSecond = request.attemptsPerSecond;
    // Only a plain purchase on a sale of one part counts its attempt inside its reservation script.
    const countedInScript =
      perSecond !== undefined &&
      idempotencyKey === undefined &&
      request.admittedAt === undefined &&
      !entry.split;
    if (perSecond !== undefined && !countedInScript) {
      await countUserAttempt(this.scripts, entry.keys.userRate(userId), perSecond);
    }
    if (idempotencyKey === undefined && soldOut?.isSoldOut(saleId)) {
      // An admitted buyer told "sold out" is done for now: its active slot is freed as the script
      // would have freed it (else a full room waits for admissions to lapse: the room's cap).
      if (request.admittedAt !== undefined) {
        await this.scripts.run(idleScript, entry.idle, [userId, request.admittedAt]);
      }
      return SOLD_OUT;
    }
    const orderId = this.nextOrderId();
    if (entry.split) return this.reserveSplit(entry.split, request, orderId);
    const { keys, list } = entry;
    const ticket = soldOut ? soldOut.ticket(saleId) : -1;
    this.batcher?.hold();
    let reply: Reply;
    const { traceparent, admittedAt } = request;
    if (idempotencyKey !== undefined && !ID_PATTERN.test(idempotencyKey)) {
      throw new TypeError('invalid idempotency key');
    }
    if (admittedAt !== undefined) {
      reply = (await this.scripts.run(
        reserveAdmittedScript,
        [
          ...list,
          idempotencyKey === undefined ? keys.stock : keys.idempotency(userId, idempotencyKey),
          ...entry.room,
        ],
        [
          userId,
          quantity,
          orderId,
          IDEMPOTENCY_TTL_SECONDS,
          idempotencyKey ?? '',
          admittedAt,
          ...(traceparent ? [traceparent] : []),
        ],
      )) as Reply;
    } else if (countedInScript) {
      const args = [userId, quantity, orderId, perSecond];
      if (traceparent) args.push(traceparent);
      reply = (await this.scripts.run(reserveLimitedScript, [...list, keys.userRate(userId)], args)) as Reply;
    } else if (idempotencyKey === undefined) {
      const args = [userId, quantity, orderId];
      if (traceparent) args.push(traceparent);
      reply = (await this.scripts.run(reserveScript, list, args)) as Reply;
    } else {
      const args = [userId, quantity, orderId, IDEMPOTENCY_TTL_SECONDS, idempotencyKey];
      if (traceparent) args.push(traceparent);
      reply = (await this.scripts.run(
        reserveIdempotentScript,
        [...list, keys.idempotency(userId, idempotencyKey)],
        args,
      )) as Reply;
    }
    if (reply === 1) return { ok: true, orderId, duplicate: false };
    if (typeof reply === 'string') return { ok: true, orderId: reply, duplicate: true };
    if (Array.isArray(reply)) {
      if (tableReply(reply) === 'rate_limited') throw new RateLimitedError(Number(reply[1]));
      soldOut?.exhausted(saleId, ticket, Number(reply[1]));
      return SOLD_OUT;
    }
    if (reply === RECOVERING) throw new SaleRecoveringError(saleId);
    if (reply === ROOM_MISSING) throw new RoomMissingError(saleId);
    if (reply === NOT_FOUND) {
      // A split sale has no stock on its own tag: learnt here, once per sale and process.
      const layout = await this.layouts.get(saleId);
      if (isSplit(layout)) {
        entry.split = SplitReserver.splitSale(layout, this.keyPrefix);
        return this.reserveSplit(entry.split, request, this.nextOrderId());
      }
    }
    const refusal = REFUSED[reply];
    if (!refusal) throw new Error(`unexpected reservation script reply ${JSON.stringify(reply)}`);
    return refusal;
  }

  private reserveSplit(split: SplitSale, request: ReserveRequest, orderId: string): Promise<Reservation> {
    if (request.admittedAt !== undefined) {
      return this.admittedSplit.reserve(request, split.parts, () =>
        this.split.reserve(split, request, orderId, IDEMPOTENCY_TTL_SECONDS),
      );
    }
    return this.split.reserve(split, request, orderId, IDEMPOTENCY_TTL_SECONDS);
  }
}
