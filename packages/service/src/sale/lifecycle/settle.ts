import type { ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from '../context/context.js';
import { SaleRecoveringError } from '../recovering.js';
import { isSplit, partKeys, partOfUser, type LayoutCache } from '../shards/layout.js';
import { partScripts } from '../shards/scripts.js';
import type { Order, SettledStatus } from '../types.js';
import { DEFAULT_OFFER_MS } from '../waitlist/settings.js';
import { lifecycleScripts, SETTLED_TTL_MS } from './scripts.js';

/**
 * Pays or cancels recorded orders in Redis (settle.lua), where every order's one transition is
 * decided; the order pipeline carries it to the record.
 */
export class OrderSettler {
  private readonly scripts: ScriptRunner;

  constructor(
    private readonly context: SaleContext,
    /** Where split sales' layouts are learnt: their orders settle on their buyer's part. */
    private readonly layouts?: LayoutCache,
    /** How long an offer to a waitlisted buyer holds a unit a cancellation gives back, ms. */
    private readonly offerMs = DEFAULT_OFFER_MS,
  ) {
    this.scripts = context.scripts;
  }

  /**
   * Asks for `state` on a confirmed order; returns the order's final state, reached now or before
   * (`expired` when its deadline has passed). The caller checked that the record holds the order as
   * confirmed. Throws SaleRecoveringError while the sale is being rebuilt from the record.
   */
  async settle(order: Order, state: 'paid' | 'cancelled'): Promise<SettledStatus> {
    const part = await this.partOf(order.saleId, order.userId);
    if (part) {
      const settled = (await this.scripts.run(
        partScripts.settle,
        [
          part.settled,
          part.deadlines,
          part.stock,
          part.buyers,
          part.stream,
          part.restock,
          part.recovering,
          part.version,
        ],
        [order.orderId, order.userId, order.quantity, state, order.payBy?.getTime() ?? 0, SETTLED_TTL_MS],
      )) as SettledStatus | 'recovering';
      if (settled === 'recovering') throw new SaleRecoveringError(order.saleId);
      return settled;
    }
    const keys = this.context.keys.sale(order.saleId);
    const settled = (await this.scripts.run(
      lifecycleScripts.settle,
      [
        keys.settled,
        keys.deadlines,
        keys.stock,
        keys.buyers,
        keys.stream,
        keys.restock,
        keys.recovering,
        keys.open,
        keys.waitlist,
        keys.offers,
      ],
      [
        order.orderId,
        order.userId,
        order.quantity,
        state,
        order.payBy?.getTime() ?? 0,
        SETTLED_TTL_MS,
        this.offerMs,
      ],
    )) as SettledStatus | 'recovering';
    if (settled === 'recovering') throw new SaleRecoveringError(order.saleId);
    return settled;
  }

  /**
   * The final state Redis holds for an order, if it was settled (the record may not show it yet). An
   * order of a split sale is looked up in its buyer's part.
   */
  async settledState(saleId: string, orderId: string, userId?: string): Promise<SettledStatus | undefined> {
    const part = userId === undefined ? undefined : await this.partOf(saleId, userId);
    const state = await this.context.redis.hget((part ?? this.context.keys.sale(saleId)).settled, orderId);
    return (state ?? undefined) as SettledStatus | undefined;
  }

  /** The keys of the user's part when the sale is split (undefined: a sale of one part). */
  private async partOf(saleId: string, userId: string) {
    const layout = await this.layouts?.get(saleId);
    if (!layout || !isSplit(layout)) return undefined;
    const part = partOfUser(userId, layout.tags.length);
    return partKeys(layout.tags[part] as string, part, this.context.prefix);
  }
}
