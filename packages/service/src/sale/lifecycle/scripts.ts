import { loadLuaScript } from 'lockstock/redis';

/** The order lifecycle's Redis scripts (see each file's header). */
export const lifecycleScripts = {
  settle: loadLuaScript(new URL('./settle.lua', import.meta.url)),
  expire: loadLuaScript(new URL('./expire.lua', import.meta.url)),
  openOrders: loadLuaScript(new URL('./open-orders.lua', import.meta.url)),
};

/**
 * How long a sale's `settled` hash outlives its last change. It must outlast any redelivery of an
 * order's stream entries (minutes at worst), so that a redelivered reservation never reopens an order
 * that was settled; the record's status guards requests from buyers after that.
 */
export const SETTLED_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** An unpaid order in the sale's deadlines set: everything its expiry needs, in one member. */
export const deadlineMember = (orderId: string, userId: string, quantity: number) =>
  `${orderId}:${userId}:${quantity}`;
