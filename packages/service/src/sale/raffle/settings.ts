import { SaleInputError } from '../errors.js';
import type { NewSale } from '../types.js';
import { newRaffle } from './raffles.js';
import type { NewRaffleRecord } from '../store/records.js';

/**
 * Checks a new sale's raffle settings; undefined for a first-come sale. A raffle gives one unit per
 * winner (perUserLimit 1) and runs on one shard: a split sale's entries would be spread over its parts,
 * and the draw, its waitlist and their one cursor would have to span them (not built; README).
 */
export function validateRaffle(
  input: NewSale,
  sale: { shards: number; perUserLimit: number; startsAt: Date; endsAt: Date },
): NewRaffleRecord | undefined {
  const admission = input.admission ?? 'first_come';
  if (admission !== 'first_come' && admission !== 'raffle') {
    throw new SaleInputError("admission must be 'first_come' or 'raffle'");
  }
  if (admission === 'first_come') {
    if (input.drawAt !== undefined) throw new SaleInputError("drawAt is for admission 'raffle' only");
    return undefined;
  }
  if (sale.shards > 1) {
    throw new SaleInputError(
      'a raffle sale cannot be split (shards must be 1): its entries, draw and waitlist live on one Redis slot',
    );
  }
  if (sale.perUserLimit !== 1) {
    throw new SaleInputError('a raffle sale gives one unit per winner: perUserLimit must be 1');
  }
  const start = sale.startsAt.getTime();
  const drawAt = input.drawAt ?? new Date(start + (sale.endsAt.getTime() - start) / 2);
  if (Number.isNaN(drawAt.getTime()) || drawAt <= sale.startsAt || drawAt >= sale.endsAt) {
    throw new SaleInputError('drawAt must be after startsAt and before endsAt');
  }
  return newRaffle(drawAt);
}
