import type { ScriptRunner } from 'lockstock/redis';
import type { SaleRedis } from '../redis.js';
import type { Database } from '../store/db.js';
import { entryHash, raffleKeys, raffleQueries, raffleScripts, type RaffleKeys } from './keys.js';

/** What a buyer is told about their entry. */
export type EntryResult =
  | { readonly ok: true; readonly entryHash: string; readonly duplicate: boolean }
  | { readonly ok: false; readonly code: EntryRefusal };

/** Why an entry was refused (each maps to one HTTP status in http/errors.ts). */
export type EntryRefusal = 'not_found' | 'entries_not_open' | 'entries_closed' | 'recovering';

/** Entries read from the stream per round (and recorded in one statement). */
export const RECORD_BATCH = 2_000;

/**
 * One entry (enter.lua): `missing` says what to do when Redis has no window for the raffle (it was
 * never loaded, or Redis lost it): load it from the record and say whether it was a raffle at all.
 */
export async function enter(
  scripts: ScriptRunner,
  keys: RaffleKeys,
  saleId: string,
  userId: string,
  missing: () => Promise<boolean>,
): Promise<EntryResult> {
  const hash = entryHash(saleId, userId);
  const run = () =>
    scripts.run(
      raffleScripts.enter,
      [keys.window, keys.entrants, keys.entries, keys.sale.recovering],
      [userId, hash],
    ) as Promise<number>;
  let code = await run();
  if (code === -1 && (await missing())) code = await run();
  switch (code) {
    case 1:
      return { ok: true, entryHash: hash, duplicate: false };
    case 0:
      return { ok: true, entryHash: hash, duplicate: true };
    case -2:
      return { ok: false, code: 'entries_not_open' };
    case -3:
      return { ok: false, code: 'entries_closed' };
    case -8:
      return { ok: false, code: 'recovering' };
    default:
      return { ok: false, code: 'not_found' };
  }
}

/**
 * Records the entries waiting in a raffle's stream, a batch at a time, then deletes them from the
 * stream (only after the commit: an entry is in the stream or in the record, never in neither). Any
 * number of processes may do this at once: an entry recorded twice is recorded once (one per buyer).
 * An entry read after the draw is not recorded (lock-entries.sql): the draw recorded what the stream
 * held when it closed the window, so such an entry is in the record already. Returns entries read.
 */
export async function recordEntries(
  redis: SaleRedis,
  db: Database,
  saleId: string,
  prefix?: string,
): Promise<number> {
  const keys = raffleKeys(saleId, prefix);
  let read = 0;
  let from = '-';
  for (;;) {
    const batch = (await redis.xrange(keys.entries, from, '+', 'COUNT', RECORD_BATCH)) as Array<
      [string, string[]]
    >;
    if (batch.length === 0) return read;
    const users: string[] = [];
    const hashes: string[] = [];
    const times: number[] = [];
    for (const [id, fields] of batch) {
      const user = fields[fields.indexOf('user') + 1];
      const hash = fields[fields.indexOf('hash') + 1];
      if (fields.indexOf('user') < 0 || fields.indexOf('hash') < 0 || !user || !hash) continue;
      users.push(user);
      hashes.push(hash);
      times.push(Number(id.split('-')[0]));
    }
    await db.transaction(async (tx) => {
      const { rows } = await tx.query<{ phase: string }>(raffleQueries.lockEntries, [saleId]);
      if (rows[0]?.phase !== 'entries') return;
      await tx.query(raffleQueries.insertEntries, [saleId, users, hashes, times]);
    });
    await redis.xdel(keys.entries, ...batch.map(([id]) => id));
    read += batch.length;
    if (batch.length < RECORD_BATCH) return read;
    from = `(${batch[batch.length - 1]?.[0] ?? '0-0'}`;
  }
}
