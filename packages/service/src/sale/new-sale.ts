import { SaleInputError } from './errors.js';
import { validateRaffle } from './raffle/settings.js';
import { MAX_SHARDS } from './shards/layout.js';
import type { NewRaffleRecord } from './store/records.js';
import type { NewSale, Sale } from './types.js';

const DAY_MS = 24 * 60 * 60 * 1000;
export const MAX_STOCK = 10_000_000;
export const MAX_PER_USER_LIMIT = 1_000;
/** A week: longer windows are not what a flash sale's reservation is for. */
export const MAX_PAY_WITHIN_SECONDS = 7 * 24 * 60 * 60;

/**
 * Checks a new sale (the HTTP schema checks the same bounds; library callers get them here). A raffle
 * fixes `beacon` (raffle/beacon.ts BeaconChain) in its commitment; none: commit–reveal only.
 */
export function validateNewSale(
  input: NewSale,
  beacon?: object,
): Omit<Sale, 'id'> & { shards: number; raffle?: NewRaffleRecord } {
  const { name, stock } = input;
  if (typeof name !== 'string' || name.trim().length === 0 || name.length > 200) {
    throw new SaleInputError('name must be a non-empty string of at most 200 characters');
  }
  if (!Number.isSafeInteger(stock) || stock < 0 || stock > MAX_STOCK) {
    throw new SaleInputError(`stock must be an integer from 0 to ${MAX_STOCK}`);
  }
  const perUserLimit = input.perUserLimit ?? 1;
  if (!Number.isSafeInteger(perUserLimit) || perUserLimit < 1 || perUserLimit > MAX_PER_USER_LIMIT) {
    throw new SaleInputError(`perUserLimit must be an integer from 1 to ${MAX_PER_USER_LIMIT}`);
  }
  const startsAt = input.startsAt ?? new Date();
  const endsAt = input.endsAt ?? new Date(startsAt.getTime() + DAY_MS);
  if (Number.isNaN(startsAt.getTime()) || Number.isNaN(endsAt.getTime())) {
    throw new SaleInputError('startsAt and endsAt must be valid dates');
  }
  if (endsAt <= startsAt) throw new SaleInputError('endsAt must be after startsAt');
  const { payWithinSeconds } = input;
  if (
    payWithinSeconds !== undefined &&
    (!Number.isSafeInteger(payWithinSeconds) ||
      payWithinSeconds < 1 ||
      payWithinSeconds > MAX_PAY_WITHIN_SECONDS)
  ) {
    throw new SaleInputError(`payWithinSeconds must be an integer from 1 to ${MAX_PAY_WITHIN_SECONDS}`);
  }
  const shards = input.shards ?? 1;
  if (!Number.isSafeInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new SaleInputError(`shards must be an integer from 1 to ${MAX_SHARDS}`);
  }
  if (shards > 1 && stock < shards) {
    throw new SaleInputError('a split sale needs at least one unit per part (stock >= shards)');
  }
  const raffle = validateRaffle(input, { shards, perUserLimit, startsAt, endsAt });
  return {
    shards,
    name: name.trim(),
    stock,
    perUserLimit,
    startsAt,
    endsAt,
    ...(payWithinSeconds === undefined ? {} : { payWithinSeconds }),
    ...(raffle ? { admission: 'raffle' as const, raffle: beacon ? { ...raffle, beacon } : raffle } : {}),
  };
}
