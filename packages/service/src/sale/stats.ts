import type { RaffleSummary } from './raffle/raffles.js';
import type { RoomStats } from './room/room.js';
import { loadLuaScript, type ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from './context/context.js';
import type { SaleRedis } from './redis.js';
import { ORDER_GROUP, saleKeys } from './keys.js';
import { ATTEMPT_OUTCOMES, isAttemptOutcome, type AttemptOutcome } from './outcomes.js';
import { statusOf } from './service.js';
import { layoutKeys, layoutOf } from './shards/layout.js';
import type { Database } from './store/db.js';
import { records, type DashboardRecord } from './store/records.js';
import type { SaleStatus } from './types.js';

const statsScript = loadLuaScript(new URL('./stats.lua', import.meta.url));

/**
 * One sale as the dashboard shows it: Redis (live) and PostgreSQL (the record) side by side. The
 * record's `cancelledUnits` and `expiredUnits` are the units that came back to the sale.
 */
export interface SaleStats extends DashboardRecord {
  status: SaleStatus;
  /** A raffle sale's phase and counts (raffle/raffles.ts summaries); absent: not a raffle. */
  raffle?: RaffleSummary;
  /** A sale's waiting room: waiting, admitted, rate (room/room.ts); absent: no room. */
  room?: RoomStats;
  /** Units Redis still offers; null when the sale is not in Redis. */
  remaining: number | null;
  /** Purchase attempts by outcome, from every process (SaleActivity). */
  attempts: Record<AttemptOutcome, number>;
  /** Distinct visitors (users or client addresses), estimated by a HyperLogLog. */
  visitors: number;
  pipeline: {
    /** Entries delivered to a pipeline consumer and not acknowledged yet. */
    pending: number;
    /** Entries no consumer has read yet. */
    undelivered: number;
    /** Age of the oldest unacknowledged entry, ms (by Redis's clock); null when there is none. */
    lagMs: number | null;
    /** Entries in the dead-letter stream. */
    deadLetters: number;
  };
  /** A split sale's parts, in order (empty for a sale of one part): what each offers and owes the record. */
  parts: PartStats[];
}

/** One part of a split sale on the dashboard. */
export interface PartStats {
  readonly part: number;
  /** Units the part offers; null when it is not in Redis. */
  readonly remaining: number | null;
  /** Its stream's entries not recorded yet (delivered or not). */
  readonly backlog: number;
  readonly lagMs: number | null;
}

export interface ReadSaleStatsOptions {
  /** Sales at most, newest first. @default 12 */
  limit?: number;
}

type StatsReply = [number, string[], number, number, number, number, string, number];

/**
 * Reads the newest sales with their live and recorded numbers: one query for the record, one script
 * call per sale for Redis (concurrent; the calls of one tick leave in one write). Redis and the
 * record are read separately, so a purchase made in between shows as reserved, not yet recorded.
 */
export async function readSaleStats(
  deps: { context: SaleContext; db: Database },
  options: ReadSaleStatsOptions = {},
): Promise<SaleStats[]> {
  const { scripts, prefix, redis } = deps.context;
  const sales = await records.dashboardSales(deps.db, options.limit ?? 12);
  return Promise.all(
    sales.map(async (sale) => {
      if (sale.partTags) return splitStats(scripts, redis, sale, prefix);
      const keys = saleKeys(sale.id, prefix);
      const [remaining, outcomes, visitors, dead, pending, undelivered, oldest, nowMs] = (await scripts.run(
        statsScript,
        [keys.stock, keys.outcomes, keys.visitors, keys.stream, keys.dead],
        [ORDER_GROUP],
      )) as StatsReply;
      const inRedis = remaining >= 0;
      return {
        ...sale,
        remaining: inRedis ? remaining : null,
        status: statusOf(sale, inRedis ? remaining : sale.stock - sale.persistedSold),
        attempts: attemptsFrom(outcomes),
        visitors,
        pipeline: {
          pending,
          undelivered,
          lagMs: oldest ? Math.max(0, nowMs - Number(oldest.split('-')[0])) : null,
          deadLetters: dead,
        },
        parts: [],
      };
    }),
  );
}

/**
 * A split sale: stats.lua on each part (its stock, stream and dead letters; the part has no outcomes
 * or visitors of its own, those live on the sale's tag and are read there), summed for the sale.
 */
async function splitStats(
  scripts: ScriptRunner,
  redis: SaleRedis,
  sale: DashboardRecord,
  prefix: string,
): Promise<SaleStats> {
  const base = saleKeys(sale.id, prefix);
  const [outcomes, visitors, replies] = await Promise.all([
    redis.hgetall(base.outcomes),
    redis.pfcount(base.visitors),
    Promise.all(
      layoutKeys(layoutOf(sale.id, sale.partTags), prefix).map(
        async (keys) =>
          (await scripts.run(
            statsScript,
            [keys.stock, keys.outcomes, keys.visitors, keys.stream, keys.dead],
            [ORDER_GROUP],
          )) as StatsReply,
      ),
    ),
  ]);
  const parts: PartStats[] = replies.map(([remaining, , , , pending, undelivered, oldest, nowMs], part) => ({
    part,
    remaining: remaining >= 0 ? remaining : null,
    backlog: pending + undelivered,
    lagMs: oldest ? Math.max(0, nowMs - Number(oldest.split('-')[0])) : null,
  }));
  const inRedis = parts.every((p) => p.remaining !== null);
  const remaining = inRedis ? parts.reduce((sum, p) => sum + (p.remaining ?? 0), 0) : null;
  const lags = parts.map((p) => p.lagMs).filter((lag): lag is number => lag !== null);
  return {
    ...sale,
    remaining,
    status: statusOf(sale, remaining ?? sale.stock - sale.persistedSold),
    attempts: attemptsFrom(Object.entries(outcomes).flat()),
    visitors,
    pipeline: {
      pending: replies.reduce((sum, r) => sum + r[4], 0),
      undelivered: replies.reduce((sum, r) => sum + r[5], 0),
      lagMs: lags.length > 0 ? Math.max(...lags) : null,
      deadLetters: replies.reduce((sum, r) => sum + r[3], 0),
    },
    parts,
  };
}

function attemptsFrom(flat: string[]): Record<AttemptOutcome, number> {
  const attempts = Object.fromEntries(ATTEMPT_OUTCOMES.map((o) => [o, 0])) as Record<AttemptOutcome, number>;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const outcome = flat[i] as string;
    if (isAttemptOutcome(outcome)) attempts[outcome] = Number(flat[i + 1]);
  }
  return attempts;
}
