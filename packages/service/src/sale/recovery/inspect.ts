import { ORDER_GROUP, type SaleKeys } from '../keys.js';
import type { SaleContext } from '../context/context.js';
import type { Queryable } from '../store/db.js';
import { recoveryQueries } from './queries.js';
import { recoveryScripts } from './scripts.js';
import { compareStreamIds, formatStreamId, parseStreamId, recordNewest } from './stream-ids.js';

/**
 * How a sale's Redis state stands against the record:
 * - `ok`: Redis has the sale and has come at least as far as the record;
 * - `missing`: the stock, the stream or its consumer group is gone (Redis lost the sale: restarted
 *   without persistence, a failover to a replica that never had it, keys deleted);
 * - `behind`: the stream's last generated id is below the newest entry the record holds — Redis came
 *   back older than it was (an AOF whose tail a crash cut, a replica that lagged, an old backup), so it
 *   would sell units and admit buyers the record already has;
 * - `recovering`: a rebuild is under way (or was, by a process that died: the caller asks the lock).
 */
export type SaleCondition =
  | { readonly kind: 'ok' }
  | { readonly kind: 'missing'; readonly what: 'stock' | 'stream' | 'consumer group' }
  | { readonly kind: 'behind'; readonly redisLastId: string; readonly recordNewestId: string }
  | { readonly kind: 'recovering'; readonly token: string };

type InspectReply = [stock: number, token: string, lastId: string, group: number];

/**
 * Compares one open sale's Redis state with the record: one indexed query and one script call.
 *
 * The record is read first. Every entry it holds was in Redis's stream before it was recorded, and a
 * stream's last generated id only grows, so Redis read afterwards is behind what the record was seen
 * to hold only if Redis lost entries. (Read the other way round — Redis first — an entry appended
 * after the read of Redis and recorded before the read of the record looks like a loss; under a
 * flash sale's load that happened, and closed and rebuilt a healthy sale.)
 */
export async function inspectSale(
  context: SaleContext,
  db: Queryable,
  saleId: string,
  keys: SaleKeys,
): Promise<SaleCondition> {
  const { rows } = await db.query<{ newest_ids: string[]; last_settled_ms: string | null }>(
    recoveryQueries.newestEntries,
    [saleId],
  );
  const row = rows[0];
  const newest = row && recordNewest(row.newest_ids, row.last_settled_ms);
  const { scripts } = context;
  const [stock, token, lastId, group] = (await scripts.run(
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

/** Why a sale (or a part) needs a rebuild. */
export type RebuildCause = Exclude<SaleCondition['kind'], 'ok'>;

/** A condition that is not ok, in words, for the logs and the reason a sale is closed. */
export function describeCondition(condition: Exclude<SaleCondition, { kind: 'ok' }>): string {
  switch (condition.kind) {
    case 'missing':
      return `Redis has no ${condition.what} for it`;
    case 'behind':
      return `Redis's stream ends at ${condition.redisLastId}, the record holds ${condition.recordNewestId}`;
    case 'recovering':
      return 'a rebuild is under way';
  }
}
