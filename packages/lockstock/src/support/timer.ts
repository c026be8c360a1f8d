/**
 * The longest delay a Node timer honours, in ms. Node fires a timer set to more (or to Infinity)
 * after 1 ms instead, and prints a TimeoutOverflowWarning each time.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * What the lock core reads time from and sets its timers on: the monotonic clock, timers, and the
 * source of a backoff's jitter. The real one (performance.now, setTimeout, Math.random) unless a
 * deterministic simulation (test/sim/) installs its own with `useCoreClock`: virtual time, per-client
 * pauses and clock rates, seeded jitter. Process-wide on purpose: the core reads it at a handful of
 * places (lease.ts, setTimer, clearTimer, jitter) instead of threading a clock through every lock.
 */
export interface CoreClock {
  /** Monotonic now, in ms. */
  now(): number;
  /** Arms a timer for a finite delay ≥ 0 (setTimer has clamped it). */
  setTimeout(callback: () => void, delayMs: number): NodeJS.Timeout;
  clearTimeout(timer: NodeJS.Timeout): void;
  /** A number in [0, 1): the jitter of a waiter's backoff. */
  random(): number;
}

const REAL_CLOCK: CoreClock = Object.freeze({
  now: () => performance.now(),
  setTimeout: (callback: () => void, delayMs: number) => setTimeout(callback, delayMs),
  clearTimeout: (timer: NodeJS.Timeout) => clearTimeout(timer),
  random: () => Math.random(),
});

let clock: CoreClock = REAL_CLOCK;

/**
 * For simulation and tests only: the core's clock from now on (undefined: the real one again).
 * Returns the clock it replaced. Never call it with locks held or waiting: their timers were armed
 * on the other clock.
 */
export function useCoreClock(replacement: CoreClock | undefined): CoreClock {
  const previous = clock;
  clock = replacement ?? REAL_CLOCK;
  return previous;
}

/** The core clock's monotonic now, in ms (lease.ts's monotonicNow). */
export const clockNow = (): number => clock.now();

/** The jitter of a waiter's backoff, in [0, 1). */
export const jitter = (): number => clock.random();

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
  return clock.setTimeout(callback, Math.min(MAX_TIMER_MS, Math.max(0, delayMs)));
}

/** `clearTimeout` for a timer of setTimer (undefined: none armed). */
export function clearTimer(timer: NodeJS.Timeout | undefined): void {
  if (timer !== undefined) clock.clearTimeout(timer);
}
