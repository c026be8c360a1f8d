import { ORDER_GROUP } from '../keys.js';
import type { SaleContext } from '../context/context.js';
import type { SaleCondition } from './inspect.js';
import { recoveryScripts } from './scripts.js';
import { compareStreamIds, formatStreamId, parseStreamId, recordNewest } from './stream-ids.js';
import type { Queryable } from '../store/db.js';
import type { PartKeys } from '../shards/layout.js';
import { partQueries } from '../shards/sql/queries.js';

type InspectReply = [stock: number, token: string, lastId: string, group: number];

/**
 * inspectSale for one part of a split sale: the part's stock, stream, group and recovery flag against
 * the newest entry the record holds of that part (orders and transfer steps). The record is read
 * first, for the reason inspectSale gives.
 */
export async function inspectPart(
  context: SaleContext,
  db: Queryable,
  saleId: string,
  keys: PartKeys,
): Promise<SaleCondition> {
  const { rows } = await db.query<{
    newest_ids: string[];
    newest_move_id: string | null;
    last_settled_ms: string | null;
  }>(partQueries.newestEntries, [saleId, keys.part]);
  const row = rows[0];
  const ids = (row?.newest_ids ?? []).map((id) => id.split('@')[0] as string);
  if (row?.newest_move_id) ids.push(row.newest_move_id);
  const newest = recordNewest(ids, row?.last_settled_ms ?? null);
  const [stock, token, lastId, group] = (await context.scripts.run(
    recoveryScripts.inspect,
    [keys.stock, keys.stream, keys.recovering],
    [ORDER_GROUP],
  )) as InspectReply;
  if (token !== '') return { kind: 'recovering', token };
  if (stock === 0) return { kind: 'missing', what: 'stock' };
  const last = parseStreamId(lastId);
  if (!last) return { kind: 'missing', what: 'stream' };
  if (group === 0) return { kind: 'missing', what: 'consumer group' };
  if (newest && compareStreamIds(newest, last) > 0) {
    return { kind: 'behind', redisLastId: lastId, recordNewestId: formatStreamId(newest) };
  }
  return { kind: 'ok' };
}
