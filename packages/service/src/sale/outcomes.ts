import type { RefusalCode, Reservation } from './types.js';

/**
 * What a purchase attempt on an existing sale ended as, as the dashboard counts it. `not_found` is
 * not one: attempts on sales that do not exist are not counted (they would let anyone create keys);
 * nor is a waiting room's refusal of an admission.
 * This module has no runtime dependencies, so the dashboard's browser code can import its types.
 */
export type AttemptOutcome = 'reserved' | 'duplicate' | Exclude<RefusalCode, 'not_found' | AdmissionRefusal>;

/** A waiting room's refusals are not attempts on the sale (as before the room's own checks): not counted. */
type AdmissionRefusal = 'admission_used' | 'admission_not_yet' | 'admission_expired';

// A Record so that the compiler insists on every outcome; the list is derived from it.
const OUTCOMES: Record<AttemptOutcome, true> = {
  reserved: true,
  duplicate: true,
  sold_out: true,
  limit_reached: true,
  not_started: true,
  ended: true,
  idempotency_key_reused: true,
};

export const ATTEMPT_OUTCOMES = Object.keys(OUTCOMES) as AttemptOutcome[];

export function isAttemptOutcome(value: string): value is AttemptOutcome {
  return Object.hasOwn(OUTCOMES, value);
}

/** What a reservation result ended as, every refusal included: the one rule for every count and span. */
export function reservationLabel(result: Reservation): 'reserved' | 'duplicate' | RefusalCode {
  if (result.ok) return result.duplicate ? 'duplicate' : 'reserved';
  return result.code;
}

/** The outcome to count for a reservation result; undefined when the sale does not exist. */
export function outcomeOf(result: Reservation): AttemptOutcome | undefined {
  const label = reservationLabel(result);
  return isAttemptOutcome(label) ? label : undefined;
}
