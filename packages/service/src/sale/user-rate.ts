import { loadLuaScript } from 'lockstock/redis';
import type { SaleContext } from './context/context.js';
import { RateLimitedError } from './errors.js';

const userRateScript = loadLuaScript(new URL('./user-rate.lua', import.meta.url));

/** The scripts' answer for an attempt over the per-user rate limit: {RATE_LIMITED, ms left}. */
export const RATE_LIMITED = -13;

/**
 * Counts one attempt of `userId` on `saleId` against `perSecond` (user-rate.lua) and throws
 * RateLimitedError when it is over. For the paths whose reservation does not count it in its own
 * round trip (reserve-limited.lua does, for a plain purchase).
 */
export async function countUserAttempt(
  sale: SaleContext,
  saleId: string,
  userId: string,
  perSecond: number,
): Promise<void> {
  const reply = (await sale.scripts.run(
    userRateScript,
    [sale.keys.sale(saleId).userRate(userId)],
    [perSecond],
  )) as number | [number, number];
  if (Array.isArray(reply)) throw new RateLimitedError(Number(reply[1]));
}
