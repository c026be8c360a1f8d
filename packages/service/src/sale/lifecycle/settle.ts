import { DEFAULT_KEY_PREFIX, ScriptRunner } from 'lockstock/redis';
import { saleKeys } from '../keys.js';
import { SaleRecoveringError } from '../recovery/errors.js';
import type { SaleRedis } from '../redis.js';
import type { Order, SettledStatus } from '../types.js';
import { lifecycleScripts, SETTLED_TTL_MS } from './scripts.js';

/**
 * Pays or cancels recorded orders in Redis (settle.lua), where every order's one transition is
 * decided; the order pipeline carries it to the record.
 */
export class OrderSettler {
  private readonly scripts: ScriptRunner;

  constructor(
    private readonly redis: SaleRedis,
    private readonly keyPrefix = DEFAULT_KEY_PREFIX,
  ) {
    this.scripts = new ScriptRunner(redis);
  }

  /**
   * Asks for `state` on a confirmed order; returns the order's final state, reached now or before
   * (`expired` when its deadline has passed). The caller checked that the record holds the order as
   * confirmed. Throws SaleRecoveringError while the sale is being rebuilt from the record.
   */
  async settle(order: Order, state: 'paid' | 'cancelled'): Promise<SettledStatus> {
    const keys = saleKeys(order.saleId, this.keyPrefix);
    const settled = (await this.scripts.run(
      lifecycleScripts.settle,
      [keys.settled, keys.deadlines, keys.stock, keys.buyers, keys.stream, keys.restock, keys.recovering],
      [order.orderId, order.userId, order.quantity, state, order.payBy?.getTime() ?? 0, SETTLED_TTL_MS],
    )) as SettledStatus | 'recovering';
    if (settled === 'recovering') throw new SaleRecoveringError(order.saleId);
    return settled;
  }

  /** The final state Redis holds for an order, if it was settled (the record may not show it yet). */
  async settledState(saleId: string, orderId: string): Promise<SettledStatus | undefined> {
    const state = await this.redis.hget(saleKeys(saleId, this.keyPrefix).settled, orderId);
    return (state ?? undefined) as SettledStatus | undefined;
  }
}
