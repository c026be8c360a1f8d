import { DEFAULT_KEY_PREFIX, type ScriptRunner } from 'lockstock/redis';
import { SaleRecoveringError } from '../recovering.js';
import type { SoldOutCache } from '../sold-out.js';
import type { RefusalCode, Reservation } from '../types.js';
import { DependencyUnavailableError } from '../unavailable.js';
import { layoutKeys, partOfUser, type PartKeys, type SaleLayout } from './layout.js';
import { partScripts } from './scripts.js';
import type { PartState, Transfers } from './transfers.js';

/** A split sale as a reserver holds it: its parts' keys and key lists, built once. */
/** No extra script argument: an untraced purchase allocates nothing for tracing. */
const UNTRACED: readonly string[] = [];

export interface SplitSale {
  readonly layout: SaleLayout;
  readonly parts: readonly PartKeys[];
  /** The reservation script's keys per part. */
  readonly lists: readonly string[][];
  /** Every part's restock channel (the sold-out cache listens to all). */
  readonly channels: readonly string[];
  /** The refill of each part this process is running, if any (dry buyers of a part share it). */
  readonly refills: Map<number, Refill>;
}

interface Refill {
  /** Set just before the first collect is sent: a buyer arriving later may not take its verdict. */
  collecting: boolean;
  readonly outcome: Promise<RefillOutcome>;
}

/**
 * What a refill found: units were moved into the part, or may be there now (`retry`); or, proven by
 * a double collect, the whole sale held `total` units, fewer than asked for (0: sold out).
 */
type RefillOutcome =
  | { readonly kind: 'retry' }
  | { readonly kind: 'short'; readonly total: number; readonly proof: SoldOutProof }
  | { readonly kind: 'recovering' };

/**
 * When a double collect proved a sale short, on the Redis clock (microseconds): every part held what
 * the first collect read from `fromUs` (its last read) to `toUs` (the second collect's first read).
 */
interface SoldOutProof {
  readonly fromUs: number;
  readonly toUs: number;
}

/**
 * Test-only (inert unless LOCKSTOCK_RECORD_VERDICTS=1): every proven sold-out verdict is printed as
 * `verdict:sold_out <sale> <fromUs> <toUs> <units left> <units asked for>`, so the split sale's
 * multi-process test judges it against the record at its own Redis time, not when the answer arrived.
 */
const recordVerdicts = process.env.LOCKSTOCK_RECORD_VERDICTS === '1';

/**
 * A deliberately wrong serve, to show the test's oracle catches one (inert unless
 * LOCKSTOCK_FAULT=false-sold-out): the first buyer of this process to find its part dry is told sold
 * out at once, without the proof, and the verdict is recorded at the Redis time of its part's read.
 */
let falseSoldOut = process.env.LOCKSTOCK_FAULT === 'false-sold-out';

/**
 * Units keep moving while a buyer keeps finding its part dry (every round moves or finishes
 * something, or another buyer took what came): after this many rounds the buyer gets a 503 and
 * retries with its Idempotency-Key rather than wait on.
 */
const MAX_ROUNDS = 64;

/** The sale's units were moving between its parts too long for this buyer: a 503, try again. */
export class SaleBusyError extends DependencyUnavailableError {
  override readonly name: string = 'SaleBusyError';

  constructor(readonly saleId: string) {
    super('redis', new Error(`units of sale ${saleId} are moving between its parts; try again`));
  }
}

export interface SplitReserverOptions {
  soldOut?: SoldOutCache;
  /** Before each script call (the reserver's write batching). */
  beforeCall?: () => void;
  /**
   * Seconds a buyer waited from finding its part dry to its answer: `reserved` (units came), `sold_out`
   * (the whole sale was proven short), or `refused` (another refusal, e.g. the limit, on the retry).
   */
  onTransferWait?: (seconds: number, outcome: TransferWaitOutcome) => void;
}

export type TransferWaitOutcome = 'reserved' | 'sold_out' | 'refused';

type Reply = number | string | [number, number];

const REFUSALS: Record<number, RefusalCode> = {
  [-1]: 'not_found',
  [-2]: 'not_started',
  [-3]: 'ended',
  [-5]: 'limit_reached',
  [-6]: 'idempotency_key_reused',
};

/**
 * Reservations of split sales (see ARCHITECTURE.md, "One sale across shards"): the buyer's part by a
 * hash of the user id, one script there; a part without the units asked for is refilled from another
 * part, and "sold out" is answered only when a double collect proves the whole sale had fewer units
 * than asked for at one instant during the request.
 */
export class SplitReserver {
  constructor(
    private readonly scripts: ScriptRunner,
    private readonly transfers: Transfers,
    private readonly options: SplitReserverOptions = {},
  ) {}

  static splitSale(layout: SaleLayout, prefix = DEFAULT_KEY_PREFIX): SplitSale {
    const parts = layoutKeys(layout, prefix);
    return {
      layout,
      parts,
      lists: parts.map((k) => [k.notBefore, k.open, k.stock, k.buyers, k.stream, k.recovering, k.version]),
      channels: parts.map((k) => k.restock),
      refills: new Map(),
    };
  }

  async reserve(
    sale: SplitSale,
    request: { userId: string; quantity: number; idempotencyKey?: string; traceparent?: string },
    orderId: string,
    idempotencyTtlSeconds: number,
  ): Promise<Reservation> {
    const { userId, quantity, idempotencyKey, traceparent } = request;
    const traced = traceparent ? [traceparent] : UNTRACED;
    const saleId = sale.layout.saleId;
    const part = partOfUser(userId, sale.parts.length);
    const keys = sale.parts[part] as PartKeys;
    const list = sale.lists[part] as string[];
    const soldOut = this.options.soldOut;
    const ticket = soldOut ? soldOut.ticket(saleId) : -1;
    let dryAt: number | undefined;
    let msUntilEnd = -1;
    for (let round = 0; ; round++) {
      this.options.beforeCall?.();
      const reply = (
        idempotencyKey === undefined
          ? await this.scripts.run(partScripts.reserve, list, [userId, quantity, orderId, ...traced])
          : await this.scripts.run(
              partScripts.reserveIdempotent,
              [...list.slice(0, 6), keys.idempotency(userId, idempotencyKey), keys.version],
              [userId, quantity, orderId, idempotencyTtlSeconds, idempotencyKey, ...traced],
            )
      ) as Reply;
      const dry = Array.isArray(reply) || reply === -7;
      if (!dry) {
        if (dryAt !== undefined) {
          const outcome = reply === 1 || typeof reply === 'string' ? 'reserved' : 'refused';
          this.options.onTransferWait?.((performance.now() - dryAt) / 1000, outcome);
        }
        if (reply === 1) return { ok: true, orderId, duplicate: false };
        if (typeof reply === 'string') return { ok: true, orderId: reply, duplicate: true };
        if (reply === -8) throw new SaleRecoveringError(saleId);
        const refusal = typeof reply === 'number' ? REFUSALS[reply] : undefined;
        if (!refusal) throw new Error(`unexpected reservation script reply ${JSON.stringify(reply)}`);
        return { ok: false, code: refusal };
      }
      // Remembered sold out (a proof, and no unit back since): a request with an Idempotency-Key asked
      // Redis for its original order and has none; it gets the answer the others get from memory.
      if (soldOut?.isSoldOut(saleId)) return { ok: false, code: 'sold_out' };
      if (falseSoldOut) {
        falseSoldOut = false;
        const [state] = await this.transfers.collect([keys]);
        const at = state?.atUs ?? 0;
        process.stdout.write(`verdict:sold_out ${saleId} ${at} ${at} 0 ${quantity}\n`);
        return { ok: false, code: 'sold_out' };
      }
      dryAt ??= performance.now();
      if (Array.isArray(reply)) msUntilEnd = Number(reply[1]);
      if (round >= MAX_ROUNDS) throw new SaleBusyError(saleId);
      const outcome = await this.refill(sale, part, quantity);
      if (outcome.kind === 'recovering') throw new SaleRecoveringError(saleId);
      if (outcome.kind === 'short') {
        this.options.onTransferWait?.((performance.now() - dryAt) / 1000, 'sold_out');
        if (recordVerdicts) {
          const { fromUs, toUs } = outcome.proof;
          process.stdout.write(`verdict:sold_out ${saleId} ${fromUs} ${toUs} ${outcome.total} ${quantity}\n`);
        }
        if (outcome.total === 0 && msUntilEnd > 0)
          soldOut?.exhausted(saleId, ticket, msUntilEnd, sale.channels);
        return { ok: false, code: 'sold_out' };
      }
    }
  }

  /**
   * Gets units into `part` for the dry buyers of this process: one refill per part at a time; a buyer
   * that arrives while one is collecting waits for it and then looks again itself (a verdict proven
   * before it arrived is not its to take).
   */
  private async refill(sale: SplitSale, part: number, wanted: number): Promise<RefillOutcome> {
    const running = sale.refills.get(part);
    if (running) {
      if (!running.collecting) return running.outcome;
      await running.outcome.catch(() => undefined);
      return { kind: 'retry' };
    }
    const refill: { collecting: boolean; outcome: Promise<RefillOutcome> } = {
      collecting: false,
      outcome: Promise.resolve({ kind: 'retry' }),
    };
    refill.outcome = Promise.resolve()
      .then(() => {
        refill.collecting = true;
        return this.refillOnce(sale, part, wanted);
      })
      .finally(() => sale.refills.delete(part));
    sale.refills.set(part, refill);
    return refill.outcome;
  }

  /** One look at every part: move units in, finish what is in flight, or prove the sale is short. */
  private async refillOnce(sale: SplitSale, part: number, wanted: number): Promise<RefillOutcome> {
    const first = await this.transfers.collect(sale.parts);
    if (first.some((s) => s.recovering || s.stock < 0)) return { kind: 'recovering' };
    const own = first[part] as PartState;
    if (own.stock >= wanted) return { kind: 'retry' };
    const donors = first
      .map((state, index) => ({ state, index }))
      .filter(({ state, index }) => index !== part && state.stock > 0)
      .sort((a, b) => b.state.stock - a.state.stock);
    for (const { index } of donors) {
      const moved = await this.transfers.move(
        sale.parts[index] as PartKeys,
        sale.parts[part] as PartKeys,
        wanted - own.stock,
      );
      if (moved > 0) return { kind: 'retry' };
    }
    if (donors.length > 0) return { kind: 'retry' }; // they sold what they had meanwhile: look again
    const inFlight = first.filter((s) => s.inflight > 0);
    if (inFlight.length > 0) {
      // Units debited and not finished (a buyer's transfer under way, or one whose process died):
      // finish them all, then look again.
      for (const [index, state] of first.entries()) {
        if (state.inflight > 0) await this.transfers.finishPending(sale.parts[index] as PartKeys, sale.parts);
      }
      return { kind: 'retry' };
    }
    const second = await this.transfers.collect(sale.parts);
    const unchanged = second.every(
      (state, i) => state.version === first[i]?.version && !state.recovering && state.stock >= 0,
    );
    if (!unchanged) return { kind: 'retry' };
    return {
      kind: 'short',
      total: first.reduce((sum, s) => sum + s.stock, 0),
      proof: { fromUs: Math.max(...first.map((s) => s.atUs)), toUs: Math.min(...second.map((s) => s.atUs)) },
    };
  }
}
