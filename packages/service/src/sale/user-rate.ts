import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import { RateLimitedError } from './errors.js';

const userRateScript = loadLuaScript(new URL('./user-rate.lua', import.meta.url));

/** The scripts' answer for an attempt over the per-user rate limit: {RATE_LIMITED, ms left}. */
export const RATE_LIMITED = -13;

/**
 * Counts one attempt against `perSecond` on `counter` (a sale's `userRate(userId)` key; user-rate.lua)
 * and throws RateLimitedError when it is over. For the paths whose reservation does not count it in
 * its own round trip (reserve-limited.lua does, for a plain purchase).
 */
export async function countUserAttempt(
  scripts: ScriptRunner,
  counter: string,
  perSecond: number,
): Promise<void> {
  const reply = (await scripts.run(userRateScript, [counter], [perSecond])) as number | [number, number];
  if (Array.isArray(reply)) throw new RateLimitedError(Number(reply[1]));
}
