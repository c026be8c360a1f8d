import { isRecordId } from '../ids/canonical.js';
import type { SaleContext } from '../context/context.js';
import type { Queryable } from '../store/db.js';
import { records } from '../store/records.js';
import { LayoutCache, layoutOf } from './layout.js';

/** A LayoutCache that asks the record when Redis has no layout key (a process with the record). */
export function recordLayouts(context: SaleContext, db: Queryable): LayoutCache {
  return new LayoutCache(context, async (saleId) => {
    if (!isRecordId(saleId)) return undefined;
    const sale = await records.getSale(db, saleId);
    return sale && layoutOf(sale.id, sale.partTags);
  });
}
