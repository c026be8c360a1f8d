import { sqlIn } from '../../support/assets.js';

const sql = sqlIn(new URL('./sql/', import.meta.url));

/** Every SQL statement of the order store, loaded once from sql/*.sql. */
export const queries = {
  insertSale: sql('insert-sale'),
  /** The service's one signing key (signing-key.ts). */
  signingKey: sql('signing-key'),
  getSale: sql('get-sale'),
  listOpenSales: sql('list-open-sales'),
  listSales: sql('list-sales'),
  lockSales: sql('lock-sales'),
  appliedEntries: sql('applied-entries'),
  lockPurchases: sql('lock-purchases'),
  insertOrders: sql('insert-orders'),
  lockOrders: sql('lock-orders'),
  settleOrders: sql('settle-orders'),
  addPurchases: sql('add-purchases'),
  releasePurchases: sql('release-purchases'),
  addSold: sql('add-sold'),
  getOrder: sql('get-order'),
  saleCounts: sql('sale-counts'),
  userPurchases: sql('user-purchases'),
  unpaidOrders: sql('unpaid-orders'),
  dashboardSales: sql('dashboard-sales'),
  recordFsync: sql('record-fsync'),
  saleGauges: sql('sale-gauges'),
  // Split sales (migrations/006_sale_parts.sql).
  setPartTags: sql('set-part-tags'),
  insertMoves: sql('insert-moves'),
  // Fencing the order pipelines during a rebuild (migrations/005_pipeline_leases.sql).
  leaseRegister: sql('lease-register'),
  leaseRenew: sql('lease-renew'),
  leaseDrained: sql('lease-drained'),
  leaseRelease: sql('lease-release'),
  leaseCheck: sql('lease-check'),
  fenceNext: sql('fence-next'),
  fenceUndrained: sql('fence-undrained'),
  fenceOut: sql('fence-out'),
} as const;
