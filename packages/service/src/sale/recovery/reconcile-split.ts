import type { SaleContext } from '../context/context.js';
import { ORDER_GROUP } from '../keys.js';
import { deadlineMember, lifecycleScripts } from '../lifecycle/scripts.js';
import type { SaleRedis } from '../redis.js';
import type { SaleCondition } from './inspect.js';
import type { RecoveryMonitor } from './monitor.js';
import type { Database } from '../store/db.js';
import { queries } from '../store/queries.js';
import { records } from '../store/records.js';
import type { Sale } from '../types.js';
import { partAllocation, type StreamMove } from '../shards/allocation.js';
import { inspectPart } from './inspect-part.js';
import { initialShares, layoutKeys, layoutOf, partOfUser, type PartKeys } from '../shards/layout.js';
import { readMoves } from './rebuild-part.js';
import { partScripts } from '../shards/scripts.js';
import { partQueries } from '../shards/sql/queries.js';
import { Transfers } from '../shards/transfers.js';

/** One part of a split sale against the record. */
export interface PartDrift {
  readonly part: number;
  /** Units the part offers in Redis (null: the part is missing). */
  readonly redisRemaining: number | null;
  /** Units it should offer: its allocation − what its recorded and unrecorded orders hold. */
  readonly expectedRemaining: number;
  /** Its allocation by the record and its stream: initial share + units credited − units given. */
  readonly allocation: number;
  /** Units of its unrecorded order entries (reservations hold, cancellations gave back). */
  readonly inFlightUnits: number;
  /** Transfers it gave that are not finished (pending in Redis). */
  readonly pendingTransfers: number;
  /** Users Redis counts lower than the record in this part. */
  readonly buyersBelowRecord: number;
  readonly condition: SaleCondition['kind'];
  /** Units offered after a repair rebuilt the part (only with `repair`). */
  repairedRemaining?: number;
}

/** A split sale as a whole, and per part. */
export interface SplitDrift {
  readonly redisRemaining: number | null;
  /** Units held by the sale's confirmed and paid orders, read after Redis. */
  readonly recordedUnits: number;
  /** Units of unrecorded order entries over all parts. */
  readonly inFlightUnits: number;
  /** Units debited by transfers and not credited anywhere yet. */
  readonly transferUnits: number;
  readonly unscheduledOrders: number;
  readonly condition: SaleCondition['kind'];
  readonly parts: PartDrift[];
}

type Snapshot = [
  remaining: number,
  inflight: number,
  units: number,
  users: Array<string | number>,
  moves: Array<string | number>,
];

/**
 * Reconciles a split sale part by part (see reconcile.ts for a sale of one part): each part's Redis
 * state against its allocation and its orders in the record, the transfers in flight between parts,
 * and the sale as a whole. A repair rebuilds every part that is damaged, drifted or counts a buyer
 * lower than the record (recovery/rebuild-part.ts: exact, under the part's flag), and schedules again the
 * unpaid orders a part lost track of.
 */
export async function reconcileSplit(
  deps: { context: SaleContext; db: Database },
  sale: Sale & { persistedSold: number },
  options: { recovery?: RecoveryMonitor },
): Promise<SplitDrift> {
  const { db, context } = deps;
  const { redis, prefix, scripts } = context;
  const layout = layoutOf(sale.id, sale.partTags);
  const parts = layoutKeys(layout, prefix);
  const shares = initialShares(sale.stock, parts.length);
  const conditions = await Promise.all(parts.map((keys) => inspectPart(context, db, sale.id, keys)));
  // Redis first, then the record: anything that moves in between is counted twice, never missed.
  const snapshots = await Promise.all(
    parts.map(
      async (keys) =>
        (await scripts.run(
          partScripts.snapshot,
          [keys.stock, keys.inflight, keys.stream],
          [ORDER_GROUP],
        )) as Snapshot,
    ),
  );
  const transfers = new Transfers(redis, scripts);
  const pendingByPart = await Promise.all(parts.map((keys) => transfers.pending(keys)));
  const transferUnits = await uncreditedUnits(redis, parts, pendingByPart.flat());
  const recordedUnits = (await records.getSale(db, sale.id))?.persistedSold ?? 0;
  const moves = await readMoves(db, sale.id);
  const holdings = await records.userPurchases(db, sale.id);
  const unpaid = await db.query<{ id: string; user_id: string; quantity: number; pay_by: Date | string }>(
    queries.unpaidOrders,
    [sale.id],
  );

  const drifts: PartDrift[] = [];
  for (const keys of parts) {
    const [seenStock, , units, users, flatMoves] = snapshots[keys.part] as Snapshot;
    const { rows } = await db.query<{ sold: number }>(partQueries.totals, [sale.id, keys.part]);
    const { allocation } = partAllocation(shares[keys.part] ?? 0, keys.part, moves, streamMoves(flatMoves));
    const expected = new Map([...holdings].filter(([user]) => partOfUser(user, parts.length) === keys.part));
    for (let i = 0; i + 1 < users.length; i += 2) {
      const user = String(users[i]);
      expected.set(user, (expected.get(user) ?? 0) + Number(users[i + 1]));
    }
    const buyers = await redis.hgetall(keys.buyers);
    drifts.push({
      part: keys.part,
      redisRemaining: seenStock < 0 ? null : seenStock,
      expectedRemaining: allocation - (rows[0]?.sold ?? 0) - units,
      allocation,
      inFlightUnits: units,
      pendingTransfers: pendingByPart[keys.part]?.length ?? 0,
      buyersBelowRecord: [...expected].filter(([user, held]) => Number(buyers[user] ?? 0) < held).length,
      condition: (conditions[keys.part] as SaleCondition).kind,
    });
  }

  const unscheduled = await unscheduledByPart(redis, parts, unpaid.rows);
  if (options.recovery) {
    for (const drift of drifts) {
      const damaged =
        drift.condition !== 'ok' ||
        drift.redisRemaining !== drift.expectedRemaining ||
        drift.buyersBelowRecord > 0;
      if (!damaged) continue;
      const keys = parts[drift.part] as PartKeys;
      const cause = drift.condition === 'ok' ? 'behind' : drift.condition;
      const report = await options.recovery.rebuildPartNow(sale, keys, cause, { force: true });
      if (report) drift.repairedRemaining = report.remaining;
    }
    for (const [part, args] of unscheduled) {
      const keys = parts[part] as PartKeys;
      await scripts.run(lifecycleScripts.openOrders, [keys.deadlines, keys.settled], args);
    }
  }

  const present = drifts.filter((d) => d.redisRemaining !== null);
  const worst = drifts.find((d) => d.condition !== 'ok')?.condition ?? 'ok';
  return {
    redisRemaining:
      present.length === drifts.length ? present.reduce((s, d) => s + (d.redisRemaining ?? 0), 0) : null,
    recordedUnits,
    inFlightUnits: drifts.reduce((s, d) => s + d.inFlightUnits, 0),
    transferUnits,
    unscheduledOrders: [...unscheduled.values()].reduce((s, args) => s + args.length / 2, 0),
    condition: worst,
    parts: drifts,
  };
}

function streamMoves(flat: Array<string | number>): StreamMove[] {
  const moves: StreamMove[] = [];
  for (let i = 0; i + 3 < flat.length; i += 4) {
    moves.push({
      transferId: String(flat[i]),
      direction: flat[i + 1] === 'in' ? 'in' : 'out',
      otherPart: Number(flat[i + 2]),
      units: Number(flat[i + 3]),
    });
  }
  return moves;
}

/** Units of pending transfers that their receivers have not credited: truly between parts. */
async function uncreditedUnits(
  redis: SaleRedis,
  parts: readonly PartKeys[],
  pending: ReadonlyArray<{ id: string; to: number; units: number }>,
): Promise<number> {
  let units = 0;
  for (const transfer of pending) {
    const receiver = parts[transfer.to];
    if (!receiver || (await redis.hexists(receiver.credits, transfer.id)) === 0) units += transfer.units;
  }
  return units;
}

/** Unpaid orders with a deadline that their part neither schedules nor has settled, by part. */
async function unscheduledByPart(
  redis: SaleRedis,
  parts: readonly PartKeys[],
  rows: ReadonlyArray<{ id: string; user_id: string; quantity: number; pay_by: Date | string }>,
): Promise<Map<number, Array<string | number>>> {
  const byPart = new Map<number, Array<string | number>>();
  for (const row of rows) {
    const keys = parts[partOfUser(row.user_id, parts.length)] as PartKeys;
    const member = deadlineMember(row.id, row.user_id, row.quantity);
    const [score, settled] = await Promise.all([
      redis.zscore(keys.deadlines, member),
      redis.hget(keys.settled, row.id),
    ]);
    if (score !== null || settled !== null) continue;
    const args = byPart.get(keys.part) ?? [];
    args.push(member, new Date(row.pay_by).getTime());
    byPart.set(keys.part, args);
  }
  return byPart;
}
