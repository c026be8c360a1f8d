import { sqlIn } from '../../support/assets.js';

const sql = sqlIn(new URL('./sql/', import.meta.url));

/** The SQL recovery reads the record with (see each file's header). */
export const recoveryQueries = {
  newestEntries: sql('newest-entries'),
  orderStates: sql('order-states'),
  settledOrders: sql('settled-orders'),
  idempotencyKeys: sql('idempotency-keys'),
} as const;
