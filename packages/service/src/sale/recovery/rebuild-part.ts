import type { ScriptRunner } from 'lockstock/redis';
import type { AdmissionRestore } from '../admission/restore.js';
import type { SaleContext } from '../context/context.js';
import { parsePartEntry } from '../pipeline/stream.js';
import { fencePipelines, type PipelineFenceOptions } from './fence.js';
import type { RebuildReport } from './rebuild.js';
import {
  readSharedRecord,
  readWholeStream,
  tallyUnrecorded,
  type SharedRecordReads,
} from './record-reads.js';
import { CHUNK, chunks, fenced, finishRebuild, restoreState } from './restore.js';
import { recoveryScripts } from './scripts.js';
import { formatStreamId, recordNewest } from './stream-ids.js';
import type { Database, Queryable } from '../store/db.js';
import type { MoveEntry, OrderEntry, SettlementEntry } from '../store/decide.js';
import { records } from '../store/records.js';
import type { Sale } from '../types.js';
import { partAllocation, type PartAllocation, type RecordedMove } from '../shards/allocation.js';
import {
  initialShares,
  layoutKeys,
  partKeys,
  partOfUser,
  type PartKeys,
  type SaleLayout,
} from '../shards/layout.js';
import { findLostCredits, restoreLostCredits } from './lost-credits.js';
import { partScripts } from '../shards/scripts.js';
import { partQueries } from '../shards/sql/queries.js';

/** What a part's rebuild put back. */
export interface PartRebuildReport extends RebuildReport {
  readonly part: number;
  /** Units the part holds by the record: its initial share + units credited − units debited. */
  readonly allocation: number;
  /** Transfers out of the part not known to be credited: pending again, finished by whoever finds them. */
  readonly pendingTransfers: number;
  /** Transfers credited to the part (each marked in `credits`, so none is credited twice). */
  readonly credits: number;
  /** Of those, credits Redis lost before the record had them: put back, their step appended again. */
  readonly lostCredits: number;
}

/**
 * Rebuilds one part of a split sale from the record plus what the part's stream still holds — what
 * rebuildSale does for a sale (see there: flag, fenced pipelines, stream, one REPEATABLE READ snapshot,
 * writes fenced by `token`), with the part's share of everything: the orders of its users (their part
 * is fixed by their user id), and its transfers. Its allocation is its initial share + what it was
 * credited − what it gave; a transfer it gave counts as given once its debit or its credit is known
 * (a credit implies the debit); one given and not known to be credited goes back to its pending
 * transfers, for anyone to finish (the receiver's `credits` answers "credited" if it was). The other
 * parts go on selling meanwhile; a transfer into this part waits until it is done (`recovering`).
 * The sale's admission state (its waiting room, on the sale's own slot) goes back first, as in
 * rebuildSale: a part Redis lost may have taken the room with it.
 */
export async function rebuildPart(
  deps: {
    context: SaleContext;
    db: Database;
    admission: AdmissionRestore;
    pipelineFence?: PipelineFenceOptions;
  },
  sale: Sale,
  layout: SaleLayout,
  part: number,
  token: string,
): Promise<PartRebuildReport | undefined> {
  const { db } = deps;
  const { redis, scripts, prefix } = deps.context;
  const parts = layout.tags.length;
  const keys = partKeys(layout.tags[part] as string, part, prefix);
  await scripts.run(recoveryScripts.begin, [keys.recovering], [token]);
  await deps.admission.restore(sale);
  const pipelines = await fencePipelines(db, deps.pipelineFence);

  const entries = await readWholeStream(redis, keys.stream, (raw) => parsePartEntry(sale.id, part, raw));
  const reservations = entries.filter((e): e is OrderEntry => e.kind === 'reservation');
  const settlements = entries.filter((e): e is SettlementEntry => e.kind === 'settlement');
  const moves = entries.filter((e): e is MoveEntry => e.kind === 'move');
  const record = await db.transaction((tx) =>
    readPartRecord(tx, sale.id, parts, part, reservations, settlements),
  );

  // Orders: as rebuildSale, on the part's share of the record.
  const unrecorded = tallyUnrecorded(record, reservations, settlements);
  const holdings = unrecorded.holdings;

  const share = initialShares(record.stock, parts)[part] ?? 0;
  const inStream = moves.map((m) => ({ ...m }));
  // Credits lost with the part's data before any pipeline read them: their units are the part's.
  const allKeys = layoutKeys(layout, prefix);
  const lost = await findLostCredits(redis, sale.id, part, allKeys, record.moves, inStream);
  const { allocation, pending, credited } = partAllocation(share, part, record.moves, [...inStream, ...lost]);
  const pendingUnits = pending.reduce((sum, t) => sum + t.units, 0);
  const remaining = Math.max(0, allocation - record.sold - unrecorded.units);

  const buyers = [...holdings].filter(([, units]) => units > 0).length;
  if (!(await restoreState(scripts, keys, token, { ...record, holdings }))) return undefined;
  if (!(await restoreTransfers(scripts, keys, token, pending, pendingUnits, credited))) return undefined;
  if (!(await restoreLostCredits(scripts, keys, token, lost))) return undefined;

  const floor = record.newest ? formatStreamId(record.newest) : '';
  if (!(await finishRebuild(scripts, keys, token, sale, remaining, floor))) return undefined;
  return {
    part,
    remaining,
    heldOffers: 0, // a split sale has no waitlist
    allocation,
    buyers,
    inFlight: unrecorded.entries,
    idempotencyKeys: record.keys.length,
    settledOrders: record.settled.length,
    unpaidOrders: record.unpaid.length,
    floor,
    pendingTransfers: pending.length,
    credits: credited.length,
    lostCredits: lost.length,
    pipelinesWaitedMs: pipelines.waitedMs,
    pipelinesFencedOut: pipelines.fencedOut,
  };
}

/** The part's pending transfers and inflight (first call), then its credits, a chunk at a time. */
async function restoreTransfers(
  scripts: ScriptRunner,
  keys: PartKeys,
  token: string,
  pending: PartAllocation['pending'],
  pendingUnits: number,
  credited: readonly string[],
): Promise<boolean> {
  const keyList = [keys.recovering, keys.transfers, keys.credits, keys.inflight, keys.version];
  const first = [
    token,
    1,
    pendingUnits,
    pending.length,
    // Debited at 0 ms: already stale, so the sweeper finishes them at its next round if no buyer does.
    ...pending.flatMap((t) => [t.id, `${t.to}:${t.units}:0`]),
  ];
  const creditChunks = [...chunks(credited, CHUNK)];
  if (
    !(await fenced(
      scripts.run(partScripts.rebuildTransfers, keyList, [...first, ...(creditChunks[0] ?? [])]),
    ))
  )
    return false;
  for (const chunk of creditChunks.slice(1)) {
    if (!(await fenced(scripts.run(partScripts.rebuildTransfers, keyList, [token, 0, 0, 0, ...chunk]))))
      return false;
  }
  return true;
}

interface PartRecord extends SharedRecordReads {
  stock: number;
  /** Units held by the part's confirmed and paid orders. */
  sold: number;
  holdings: Map<string, number>;
  settled: Array<{ id: string; status: string }>;
  newest: ReturnType<typeof recordNewest>;
  moves: RecordedMove[];
}

async function readPartRecord(
  tx: Queryable,
  saleId: string,
  parts: number,
  part: number,
  reservations: readonly OrderEntry[],
  settlements: readonly SettlementEntry[],
): Promise<PartRecord> {
  await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
  const sale = await records.getSale(tx, saleId);
  if (!sale) throw new Error(`sale ${saleId} is not in the record`);
  const ours = (userId: string) => partOfUser(userId, parts) === part;
  const totals = await tx.query<{ sold: number }>(partQueries.totals, [saleId, part]);
  const holdings = new Map([...(await records.userPurchases(tx, saleId))].filter(([user]) => ours(user)));
  const shared = await readSharedRecord(tx, saleId, reservations, settlements, ours);
  const settled = await tx.query<{ id: string; status: string }>(partQueries.settledOrders, [saleId, part]);
  const newest = await tx.query<{
    newest_ids: string[];
    newest_move_id: string | null;
    last_settled_ms: string | null;
  }>(partQueries.newestEntries, [saleId, part]);
  const moves = await readMoves(tx, saleId);
  const row = newest.rows[0];
  const newestIds = (row?.newest_ids ?? []).map((id) => id.split('@')[0] as string);
  if (row?.newest_move_id) newestIds.push(row.newest_move_id);
  return {
    ...shared,
    stock: sale.stock,
    sold: totals.rows[0]?.sold ?? 0,
    holdings,
    settled: settled.rows,
    newest: recordNewest(newestIds, row?.last_settled_ms ?? null),
    moves,
  };
}

/** Every recorded transfer step of a split sale. */
export async function readMoves(db: Queryable, saleId: string): Promise<RecordedMove[]> {
  const { rows } = await db.query<{
    part: number;
    transfer_id: string;
    kind: 'out' | 'in';
    other_part: number;
    units: number;
  }>(partQueries.moves, [saleId]);
  return rows.map((m) => ({
    part: Number(m.part),
    transferId: m.transfer_id,
    kind: m.kind,
    otherPart: Number(m.other_part),
    units: m.units,
  }));
}
