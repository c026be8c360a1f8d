/**
 * How long an offer to a waitlisted buyer holds its unit apart from the stock before it passes to the
 * next in line, ms: long enough for a buyer who polls their standing every few seconds to see it and
 * buy, short enough that a line of absent buyers does not keep a returned unit off sale for long.
 */
export const DEFAULT_OFFER_MS = 120_000;

/** An offer window given by an operator: a whole number of ms from 1 s to 1 h. */
export function validOfferMs(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 1_000 || ms > 3_600_000) {
    throw new TypeError(`an offer window is 1000..3600000 ms, got ${ms}`);
  }
  return ms;
}

/**
 * The offer window of `serve` and `worker`: LOCKSTOCK_WAITLIST_OFFER_SECONDS (1..3600), else the
 * default. Every process that settles or sweeps a sale should say the same: each offer keeps the end it
 * was given, so processes that differ only give different offers different windows.
 */
export function offerMsFromEnv(env: Record<string, string | undefined> = process.env): number {
  const seconds = env.LOCKSTOCK_WAITLIST_OFFER_SECONDS;
  if (seconds === undefined || seconds === '') return DEFAULT_OFFER_MS;
  if (!/^\d+$/.test(seconds)) {
    throw new TypeError(`LOCKSTOCK_WAITLIST_OFFER_SECONDS is a whole number of seconds, got "${seconds}"`);
  }
  return validOfferMs(Number(seconds) * 1000);
}
