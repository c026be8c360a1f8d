import type { Order, OrderAction, OrderActionResult, OrderRefusalCode, OrderStatus } from '../types.js';
import type { OrderSettler } from './settle.js';

/**
 * What a buyer's action answers for an order in `status`: `act` (settle it now), `ok` (it is done
 * already: both actions are idempotent) or why not. Cancelling an expired order is `ok`: its units are
 * back, which is what the buyer asked for.
 */
export function answerFor(action: OrderAction, status: OrderStatus): 'act' | 'ok' | OrderRefusalCode {
  if (status === 'confirmed') return 'act';
  if (status === 'reserved') return 'order_pending';
  if (status === 'rejected') return 'order_rejected';
  if (action === 'pay') {
    if (status === 'paid') return 'ok';
    return status === 'cancelled' ? 'order_cancelled' : 'order_expired';
  }
  return status === 'paid' ? 'order_paid' : 'ok';
}

/**
 * Pays or cancels an order for its buyer. `order` is how the record (overlaid with Redis's settled
 * state) holds it; Redis decides the transition (settle.lua) and the pipeline records it.
 */
export async function actOnOrder(
  settler: OrderSettler,
  order: Order | undefined,
  userId: string,
  action: OrderAction,
): Promise<OrderActionResult> {
  // Someone else's order answers exactly like a missing one: ids reveal nothing.
  if (!order || order.userId !== userId) return { ok: false, code: 'not_found' };
  let current = order;
  let answer = answerFor(action, current.status);
  if (answer === 'act') {
    const status = await settler.settle(current, action === 'pay' ? 'paid' : 'cancelled');
    current = { ...current, status };
    answer = answerFor(action, status);
  }
  return answer === 'ok'
    ? { ok: true, order: current }
    : { ok: false, code: answer as OrderRefusalCode, order: current };
}
