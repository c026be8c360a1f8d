import type { AdmissionRestore } from '../admission/restore.js';
import type { SaleKeys } from '../keys.js';
import { parseStreamEntry } from '../pipeline/stream.js';
import type { SaleContext } from '../context/context.js';
import type { Database, Queryable } from '../store/db.js';
import type { OrderEntry, SettlementEntry } from '../store/decide.js';
import { records } from '../store/records.js';
import type { Sale } from '../types.js';
import { fencePipelines, type PipelineFenceOptions } from './fence.js';
import { recoveryQueries } from './queries.js';
import {
  readSharedRecord,
  readWholeStream,
  tallyUnrecorded,
  type SharedRecordReads,
} from './record-reads.js';
import { chunks, CHUNK, finishRebuild, restoreState } from './restore.js';
import { DEFAULT_OFFER_MS } from '../waitlist/settings.js';
import { rebuildLineScript, rebuildOffersScript, recordedLine } from '../waitlist/waitlist.js';
import { recoveryScripts } from './scripts.js';
import { formatStreamId, recordNewest } from './stream-ids.js';

/** What a rebuild put back. */
export interface RebuildReport {
  /** Units left to sell afterwards. */
  readonly remaining: number;
  /** Units kept apart as offers to waitlisted buyers (waitlist/), not in `remaining`. */
  readonly heldOffers: number;
  /** Users holding units (record plus unrecorded entries). */
  readonly buyers: number;
  /** Stream entries Redis still had that the record has not applied yet (they stay, and count). */
  readonly inFlight: number;
  readonly idempotencyKeys: number;
  readonly settledOrders: number;
  readonly unpaidOrders: number;
  /** The stream's id floor: new entries sort after it ('' when the record holds no entry). */
  readonly floor: string;
  /** How long the rebuild waited for the order pipelines to record what they held, ms. */
  readonly pipelinesWaitedMs: number;
  /** Pipelines it went ahead without (lease lapsed, or the wait limit reached): their held batches are refused. */
  readonly pipelinesFencedOut: readonly string[];
}

/**
 * Rebuilds a sale's Redis state from the record plus what Redis still holds that the record has not
 * applied yet. The caller holds the sale's recovery lock; `token` fences every write (see begin.lua).
 *
 * 1. The flag goes up (begin.lua): nothing sells, settles or expires in this sale from here on, so
 *    Redis's side stands still while it is read. The sale's admission state (its waiting room) is
 *    put back from the record (`deps.admission`).
 * 2. The order pipelines are fenced (fence.ts): each has recorded what it read before the flag went
 *    up — entries a Redis that restarted empty no longer has, so only the record can count them — or
 *    can no longer record it.
 * 3. Every entry still in the sale's stream is read (the pipeline trims recorded ones; what is left is
 *    recent or unrecorded), then the record in one REPEATABLE READ snapshot: its totals, holdings,
 *    final states, unpaid orders, Idempotency-Keys, newest entries — and which of the stream's entries
 *    it has applied. An entry the pipeline records meanwhile is in the snapshot or counted in flight,
 *    never both: the snapshot decides.
 * 4. Stock = stock − units the record holds − units unrecorded entries hold (reservations hold,
 *    cancellations and expiries gave back) − units Redis still holds as offers to the waitlist (kept
 *    up to what the record leaves: rebuild-offers.lua); buyers likewise, per user; the record's final states,
 *    unpaid orders and keys go back; the stream gets its consumer group and its id floor; the flag
 *    goes and the restock message is published (finish.lua).
 *
 * Returns undefined if the token stopped holding half-way (another rebuild took over, or Redis lost
 * the flag): what was written is rewritten by whoever holds it now.
 */
export async function rebuildSale(
  deps: {
    context: SaleContext;
    db: Database;
    admission: AdmissionRestore;
    pipelineFence?: PipelineFenceOptions;
    /** How long an offer the rebuild makes to a waitlisted buyer holds its unit, ms. */
    offerMs?: number;
  },
  sale: Sale,
  keys: SaleKeys,
  token: string,
): Promise<RebuildReport | undefined> {
  const { db } = deps;
  const { redis, scripts } = deps.context;
  await scripts.run(recoveryScripts.begin, [keys.recovering], [token]);
  // The sale's admission (its waiting room, a raffle's cursor) goes back before its stock: a sale
  // Redis can sell always has its room there, even for a process that starts while the record is down.
  await deps.admission.restore(sale);
  const pipelines = await fencePipelines(db, deps.pipelineFence);

  const entries = await readWholeStream(redis, keys.stream, (raw) => parseStreamEntry(sale.id, raw));
  const reservations = entries.filter((e): e is OrderEntry => e.kind === 'reservation');
  const settlements = entries.filter((e): e is SettlementEntry => e.kind === 'settlement');
  const record = await db.transaction((tx) => readRecord(tx, sale.id, reservations, settlements));

  const unrecorded = tallyUnrecorded(record, reservations, settlements);
  const unsold = Math.max(0, record.stock - record.sold - unrecorded.units);
  const holdings = unrecorded.holdings;
  const buyers = [...holdings].filter(([, units]) => units > 0).length;
  if (!(await restoreState(scripts, keys, token, { ...record, holdings }))) return undefined;
  // Units held apart as offers to the waitlist stay offered (as many as the record leaves unsold);
  // the stock gets the rest, so stock + offers + orders = the sale's stock again.
  const heldOffers = Number(
    await scripts.run(rebuildOffersScript, [keys.recovering, keys.offers], [token, unsold]),
  );
  if (heldOffers < 0) return undefined;
  const remaining = await restoreLine(deps, sale, keys, token, unsold - heldOffers);
  if (remaining === undefined) return undefined;

  const floor = record.newest ? formatStreamId(record.newest) : '';
  if (!(await finishRebuild(scripts, keys, token, sale, remaining, floor))) return undefined;
  return {
    remaining,
    heldOffers,
    buyers,
    inFlight: unrecorded.entries,
    idempotencyKeys: record.keys.length,
    settledOrders: record.settled.length,
    unpaidOrders: record.unpaid.length,
    floor,
    pipelinesWaitedMs: pipelines.waitedMs,
    pipelinesFencedOut: pipelines.fencedOut,
  };
}

/**
 * The recorded waitlist goes back into Redis (rebuild-line.lua, in chunks) and the units left are
 * offered to its head first; returns the units that go to the stock (undefined: the token stopped
 * holding). Read after the fence: a join recorded later was refused by the flag in Redis.
 */
async function restoreLine(
  deps: { context: SaleContext; db: Database; offerMs?: number },
  sale: Sale,
  keys: SaleKeys,
  token: string,
  units: number,
): Promise<number | undefined> {
  const { scripts } = deps.context;
  const line = await recordedLine(deps.db, sale.id);
  const parts = [...chunks(line, CHUNK)];
  let toStock = 0;
  for (const [i, part] of (parts.length > 0 ? parts : [[]]).entries()) {
    const last = i === Math.max(0, parts.length - 1);
    const reply = Number(
      await scripts.run(
        rebuildLineScript,
        [keys.recovering, keys.stock, keys.buyers, keys.waitlist, keys.offers],
        [
          token,
          i === 0 ? 1 : 0,
          last ? units : -1,
          sale.perUserLimit,
          deps.offerMs ?? DEFAULT_OFFER_MS,
          ...part.flatMap((place) => [place.seq, place.userId]),
        ],
      ),
    );
    if (reply < 0) return undefined;
    toStock = reply;
  }
  return toStock;
}

interface RecordView extends SharedRecordReads {
  stock: number;
  /** Units held by confirmed and paid orders. */
  sold: number;
  holdings: Map<string, number>;
  settled: Array<{ id: string; status: string }>;
  newest: ReturnType<typeof recordNewest>;
}

async function readRecord(
  tx: Queryable,
  saleId: string,
  reservations: readonly OrderEntry[],
  settlements: readonly SettlementEntry[],
): Promise<RecordView> {
  // One snapshot for every read below (the pipeline writes the holdings, totals and inbox together).
  await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
  const sale = await records.getSale(tx, saleId);
  if (!sale) throw new Error(`sale ${saleId} is not in the record`);
  const holdings = await records.userPurchases(tx, saleId);
  const shared = await readSharedRecord(tx, saleId, reservations, settlements);
  const settled = await tx.query<{ id: string; status: string }>(recoveryQueries.settledOrders, [saleId]);
  const newest = await tx.query<{ newest_ids: string[]; last_settled_ms: string | null }>(
    recoveryQueries.newestEntries,
    [saleId],
  );
  return {
    ...shared,
    stock: sale.stock,
    sold: sale.persistedSold,
    holdings,
    settled: settled.rows,
    newest: recordNewest(newest.rows[0]?.newest_ids ?? [], newest.rows[0]?.last_settled_ms ?? null),
  };
}
