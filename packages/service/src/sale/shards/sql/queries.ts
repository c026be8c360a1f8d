import { sqlIn } from '../../../support/assets.js';

const sql = sqlIn(new URL('./', import.meta.url));

/** The record's queries about split sales (see each file's header). */
export const partQueries = {
  newestEntries: sql('part-newest-entries'),
  totals: sql('part-totals'),
  settledOrders: sql('part-settled-orders'),
  moves: sql('sale-moves'),
} as const;
