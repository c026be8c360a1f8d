/**
 * Sale and order ids are PostgreSQL bigints written in decimal. Only their canonical form names
 * them: no sign, no leading zero, at most 2^63 − 1. Anything else ("0001", "1e3", a 20-digit number)
 * must be refused before it is used — PostgreSQL would read "0001" as sale 1 while Redis keys are
 * built from the text, and a number beyond the bigint range is a database error, not "no such order".
 */
export const MAX_RECORD_ID = 9_223_372_036_854_775_807n;

/** The canonical decimal form, as a pattern (the range is checked by isRecordId). */
export const RECORD_ID_PATTERN = /^[1-9][0-9]{0,18}$/;

/** Whether `raw` is the canonical decimal form of an id a bigint column can hold. */
export function isRecordId(raw: string): boolean {
  return RECORD_ID_PATTERN.test(raw) && BigInt(raw) <= MAX_RECORD_ID;
}
