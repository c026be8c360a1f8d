import { createHash } from 'node:crypto';
import type { PublishedRaffle } from './raffles.js';

/** What `verifyRaffle` found. */
export interface RaffleVerdict {
  /** True when every check passed (a raffle not drawn yet is never ok: there is nothing to check). */
  readonly ok: boolean;
  /** One line per check, as printed by `lockstock raffle verify`. */
  readonly checks: ReadonlyArray<{ ok: boolean; line: string }>;
  /** Entrants given a unit: places 1..winners. */
  readonly winners: number;
  /** The place of `hash`, when one was asked about. */
  readonly entry?: { position: number; won: boolean };
}

/**
 * The draw's place of each entry, recomputed here from the seed and the entry hashes alone (its own
 * code, not the service's SQL, draw-order.sql): ascending SHA-256(seed ‖ entry hash as bytes), ties
 * by the entry hash. Returns the hashes in draw order.
 */
export function drawOrder(seedHex: string, hashes: readonly string[]): string[] {
  const seed = Buffer.from(seedHex, 'hex');
  return hashes
    .map((hash) => ({
      hash,
      key: createHash('sha256').update(seed).update(Buffer.from(hash, 'hex')).digest('hex'),
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0))
    .map((entry) => entry.hash);
}

/**
 * Checks a raffle from its published data: the seed is the one committed to (its SHA-256 was
 * published before any entry), the published places are the draw order recomputed from the seed and
 * the entries, and the entrants given a unit are the first ones in that order (the winners, then
 * the waitlist in order) and at least the first `stock` of them. `entryHash`: also say where that
 * entry is (a buyer checks their own: SHA-256 of "<sale id>:<user id>").
 */
export function verifyRaffle(data: PublishedRaffle, entryHash?: string): RaffleVerdict {
  const checks: Array<{ ok: boolean; line: string }> = [];
  const check = (ok: boolean, line: string) => checks.push({ ok, line });
  const won = data.entries.filter((e) => e.won);
  if (data.phase !== 'drawn' || !data.seed) {
    check(
      false,
      `raffle ${data.saleId} is not drawn yet (${data.entries.length} entries so far): nothing to verify`,
    );
    return { ok: false, checks, winners: won.length };
  }
  const seedHash = createHash('sha256').update(Buffer.from(data.seed, 'hex')).digest('hex');
  check(
    seedHash === data.seedHash && /^[0-9a-f]{64}$/.test(data.seed),
    `seed ${seedHash === data.seedHash ? 'matches' : 'does NOT match'} the commitment ${data.seedHash}`,
  );
  const order = drawOrder(
    data.seed,
    data.entries.map((e) => e.hash),
  );
  const placeOf = new Map(order.map((hash, i) => [hash, i + 1]));
  const misplaced = data.entries.filter((e) => e.position !== placeOf.get(e.hash));
  check(
    misplaced.length === 0 && placeOf.size === data.entries.length,
    misplaced.length === 0
      ? `draw order recomputed from the seed and ${data.entries.length} entries: every place matches`
      : `${misplaced.length} of ${data.entries.length} entries are NOT at the place the seed gives them (first: ${misplaced[0]?.hash})`,
  );
  const wonPlaces = won.map((e) => placeOf.get(e.hash) ?? 0).sort((a, b) => a - b);
  const prefix = wonPlaces.every((place, i) => place === i + 1);
  check(
    prefix,
    prefix
      ? `winners are the first ${won.length} entrants in draw order`
      : `winners are NOT the first entrants in draw order (places ${wonPlaces.slice(0, 10).join(', ')}…)`,
  );
  const due = Math.min(data.stock, data.entries.length);
  check(
    won.length >= due,
    won.length >= due
      ? `the first ${due} entrants (stock ${data.stock}) were all given a unit`
      : `only ${won.length} entrants were given a unit where the stock (${data.stock}) covers ${due}: not all recorded yet, or withheld`,
  );
  const position = entryHash === undefined ? undefined : placeOf.get(entryHash);
  return {
    ok: checks.every((c) => c.ok),
    checks,
    winners: won.length,
    ...(position === undefined
      ? {}
      : { entry: { position, won: data.entries.some((e) => e.hash === entryHash && e.won) } }),
  };
}
