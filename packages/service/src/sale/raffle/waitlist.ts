import type { ScriptRunner } from 'lockstock/redis';
import { parseStreamEntry } from '../pipeline/stream.js';
import type { SaleRedis } from '../redis.js';
import type { Database } from '../store/db.js';
import { raffleKeys, raffleQueries, raffleScripts, type RaffleKeys } from './keys.js';

/** Entrants served per script call at most. */
export const PROMOTE_BATCH = 500;

/** What one `serveWaitlist` call did. */
export interface ServeOutcome {
  /** Units given to entrants now. */
  readonly given: number;
  /** Why it stopped: no unit left, nobody left in line, or the sale cannot be served now. */
  readonly stopped: 'no_units' | 'line_empty' | 'ended' | 'recovering' | 'lost' | 'recording';
}

interface Deps {
  redis: SaleRedis;
  db: Database;
  scripts: ScriptRunner;
  nextOrderId: () => string;
  keyPrefix?: string;
}

/**
 * Gives the units a drawn raffle has left to the next entrants in draw order (promote.lua), until none
 * is left (or the record has not recorded their return yet: see unitsToGive) or nobody is left in line: the draw's winners first, then the waitlist as units come back.
 * Any number of processes may run this at once: promote.lua serves from one cursor and refuses a stale
 * place, so entrants are served in order, once each. A raffle whose cursor Redis does not have (the
 * first call after the draw, or Redis lost it) gets it back first (restoreCursor).
 */
export async function serveWaitlist(deps: Deps, saleId: string): Promise<ServeOutcome> {
  const keys = raffleKeys(saleId, deps.keyPrefix);
  let given = 0;
  for (let round = 0; round < 1_000; round++) {
    const [stock, cursor] = await deps.redis.mget(keys.sale.stock, keys.cursor);
    if (stock === null) return { given, stopped: 'lost' };
    if (cursor === null) {
      const restored = await restoreCursor(deps, saleId, keys);
      if (restored === -8) return { given, stopped: 'recovering' };
      continue;
    }
    if (Number(stock) <= 0) return { given, stopped: 'no_units' };
    const units = await unitsToGive(deps, saleId, keys);
    if (units === undefined) return { given, stopped: 'lost' };
    if (units.count <= 0) return { given, stopped: 'recording' };
    const { rows } = await deps.db.query<{ user_id: string; position: number }>(raffleQueries.nextEntrants, [
      saleId,
      units.place,
      Math.min(units.count, PROMOTE_BATCH),
    ]);
    if (rows.length === 0) return { given, stopped: 'line_empty' };
    const users = rows.map((r) => r.user_id);
    const orderIds = users.map(() => deps.nextOrderId());
    const reply = (await deps.scripts.run(
      raffleScripts.promote,
      [
        keys.sale.stock,
        keys.sale.open,
        keys.sale.buyers,
        keys.sale.stream,
        keys.sale.recovering,
        keys.cursor,
      ],
      [units.place, users.length, ...users, ...orderIds],
    )) as number[];
    const code = reply[0] ?? -1;
    if (code === -3) return { given, stopped: 'ended' };
    if (code === -8) return { given, stopped: 'recovering' };
    if (code === -1) return { given, stopped: 'lost' };
    if (code > 0) given += reply[1] ?? 0;
    // -9 (cursor gone) and -10 (another process served first): read again.
  }
  return { given, stopped: 'no_units' };
}

/**
 * How many entrants may be served now, from which place: no more than the record can confirm. The
 * order pipeline's consumers record a sale's entries in parallel, so a winner served with a unit a
 * cancellation gave back could be recorded before that cancellation — and rejected as beyond the
 * stock. So a unit is given only once the record has it free: stock − units the record holds −
 * entrants served but not recorded yet (served places − recorded orders; every order of a raffle sale
 * is a served entrant). The record is read before the cursor: a cursor that moved on in between only
 * makes the count smaller. promote.lua still checks Redis's stock, and the cursor (the place).
 */
async function unitsToGive(
  deps: Deps,
  saleId: string,
  keys: RaffleKeys,
): Promise<{ place: number; count: number } | undefined> {
  const { rows } = await deps.db.query<{ stock: number; sold: number; orders: number }>(
    raffleQueries.recordFree,
    [saleId],
  );
  const record = rows[0];
  const [stock, cursor] = await deps.redis.mget(keys.sale.stock, keys.cursor);
  if (!record || stock === null || cursor === null) return undefined;
  const place = Number(cursor);
  const unrecorded = Math.max(0, place - 1 - record.orders);
  return { place, count: Math.min(Number(stock), record.stock - record.sold - unrecorded) };
}

/**
 * Puts a raffle's cursor back in Redis: the place after the last entrant who holds an order, in the
 * orders stream (read first) or in the record (read after it: an order the pipeline records and trims
 * in between is in the record by then). Nothing is served while the cursor is missing, so the two
 * reads cannot miss a winner; a raffle never served gets place 1 (the draw's first winner). Returns
 * cursor.lua's reply (1 set, 0 someone else set it, -8 the sale is being recovered).
 */
export async function restoreCursor(deps: Deps, saleId: string, keys: RaffleKeys): Promise<number> {
  const entries = (await deps.redis.xrange(keys.sale.stream, '-', '+')) as Array<[string, string[]]>;
  const users = new Set<string>();
  for (const [id, fields] of entries) {
    const entry = parseStreamEntry(saleId, { stream: keys.sale.stream, id, fields });
    if (entry?.kind === 'reservation') users.add(entry.userId);
  }
  const { rows } = await deps.db.query<{ last: number }>(raffleQueries.lastServed, [saleId, [...users]]);
  const next = (rows[0]?.last ?? 0) + 1;
  return (await deps.scripts.run(
    raffleScripts.cursor,
    [keys.cursor, keys.sale.recovering],
    [next],
  )) as number;
}

/**
 * Makes a raffle's cursor be read again from the record (recovery/rebuild.ts calls this while the
 * sale's recovery flag is up: a Redis that came back older may hold an older cursor, which would
 * serve entrants again).
 */
export async function forgetCursor(redis: SaleRedis, saleId: string, keyPrefix?: string): Promise<void> {
  await redis.del(raffleKeys(saleId, keyPrefix).cursor);
}
