import { createHash } from 'node:crypto';
import { loadLuaScript } from 'lockstock/redis';
import { sqlIn } from '../../support/assets.js';
import { saleKeys, type SaleKeys } from '../keys.js';

/**
 * A raffle's Redis keys: on its sale's hash tag `{sale:<id>}`, so each raffle script (and the winners'
 * reservations, which use the sale's own keys) stays on one Cluster slot.
 */
export interface RaffleKeys {
  readonly sale: SaleKeys;
  /** hash {opens, closes}: the entry window, ms (Redis clock) */
  readonly window: string;
  /** hash {user id: entry hash}: who entered (one entry per buyer) */
  readonly entrants: string;
  /** stream of entries {user, hash}, recorded into raffle_entries and then deleted */
  readonly entries: string;
  /** string: the place in the draw order of the next entrant to serve (promote.lua) */
  readonly cursor: string;
}

export function raffleKeys(saleId: string, prefix?: string): RaffleKeys {
  const sale = saleKeys(saleId, prefix);
  const base = sale.stock.slice(0, -':stock'.length);
  return {
    sale,
    window: `${base}:raffle:window`,
    entrants: `${base}:raffle:entrants`,
    entries: `${base}:raffle:entries`,
    cursor: `${base}:raffle:cursor`,
  };
}

/**
 * The id an entry is published under: hex SHA-256 of "<sale id>:<user id>". It is the same for every
 * entry of a buyer (nothing for anyone to choose), and the buyer can find it in the published list.
 */
export function entryHash(saleId: string, userId: string): string {
  return createHash('sha256').update(`${saleId}:${userId}`).digest('hex');
}

/** The raffle's Redis scripts (see each file's header). */
export const raffleScripts = {
  enter: loadLuaScript(new URL('./lua/enter.lua', import.meta.url)),
  window: loadLuaScript(new URL('./lua/window.lua', import.meta.url)),
  promote: loadLuaScript(new URL('./lua/promote.lua', import.meta.url)),
  cursor: loadLuaScript(new URL('./lua/cursor.lua', import.meta.url)),
};

const sql = sqlIn(new URL('./sql/', import.meta.url));

/** The raffle's SQL (see each file's header). */
export const raffleQueries = {
  rafflePhase: sql('raffle-phase'),
  lockEntries: sql('lock-entries'),
  insertEntries: sql('insert-entries'),
  lockDraw: sql('lock-draw'),
  drawOrder: sql('draw-order'),
  drawDone: sql('draw-done'),
  closeDone: sql('close-done'),
  drawSettings: sql('draw-settings'),
  drawnLeaves: sql('drawn-leaves'),
  closeNow: sql('close-now'),
  activeRaffles: sql('active-raffles'),
  getRaffle: sql('get-raffle'),
  nextEntrants: sql('next-entrants'),
  recordFree: sql('record-free'),
  lastServed: sql('last-served'),
  publishedEntries: sql('published-entries'),
  entryOf: sql('entry-of'),
  raffleSummaries: sql('raffle-summaries'),
  benchEntries: sql('bench-entries'),
};
