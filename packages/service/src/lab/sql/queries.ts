import { sqlIn } from '../../support/assets.js';

const sql = sqlIn(new URL('./', import.meta.url));

/** Every SQL statement of the lab, loaded once from sql/*.sql (strategies keep the seeds' shapes). */
export const labQueries = {
  schema: sql('schema'),
  insertStock: sql('insert-stock'),
  readStock: sql('read-stock'),
  readStockForUpdate: sql('read-stock-for-update'),
  readStockVersion: sql('read-stock-version'),
  writeStock: sql('write-stock'),
  decrementStockUnchecked: sql('decrement-stock-unchecked'),
  decrementStockIfAvailable: sql('decrement-stock-if-available'),
  decrementStockIfVersion: sql('decrement-stock-if-version'),
  insertOrder: sql('insert-order'),
  listOrders: sql('list-orders'),
  takeLockRow: sql('take-lock-row'),
  releaseLockRow: sql('release-lock-row'),
  serviceConfirmedBuyers: sql('service-confirmed-buyers'),
  serviceSaleTimes: sql('service-sale-times'),
} as const;
