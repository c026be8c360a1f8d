/**
 * The longest delay a Node timer honours, in ms. Node fires a timer set to more (or to Infinity)
 * after 1 ms instead, and prints a TimeoutOverflowWarning each time.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `setTimeout` for a delay that may be Infinity or longer than a Node timer can wait — a hold with no
 * lease end, a retry hint from a key another tool set with a long TTL, a user's interval. Infinity
 * arms no timer (undefined: nothing to wait for), a longer delay is clamped to MAX_TIMER_MS (the
 * callback then runs early, so it must check its own condition, as every caller here does: a waiter
 * tries again, a poll reads again), a negative one is 0. Node's own behaviour would run the callback
 * after 1 ms, over and over where it re-arms itself.
 */
export function setTimer(callback: () => void, delayMs: number): NodeJS.Timeout | undefined {
  if (delayMs === Infinity) return undefined;
  return setTimeout(callback, Math.min(MAX_TIMER_MS, Math.max(0, delayMs)));
}

/** `clearTimeout` for a timer of setTimer (undefined: none armed). */
export function clearTimer(timer: NodeJS.Timeout | undefined): void {
  if (timer !== undefined) clearTimeout(timer);
}
