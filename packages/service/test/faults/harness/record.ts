import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ORDER_GROUP, saleKeys } from '../../../src/sale/keys.js';
import type { FinalState, RecordedOrder } from './checker.js';

const sql = (name: string) => readFileSync(new URL(`./sql/${name}.sql`, import.meta.url), 'utf8');
const SALE_ORDERS = sql('sale-orders');
const SALE_TOTALS = sql('sale-totals');

/** The order pipeline's backlog on a sale's stream, from Redis. */
export async function backlog(redis: Redis, saleId: string) {
  const keys = saleKeys(saleId);
  const groups = (await redis.call('XINFO', 'GROUPS', keys.stream)) as unknown[][];
  const group = groups
    .map((flat) => {
      const fields = new Map<string, unknown>();
      for (let i = 0; i + 1 < flat.length; i += 2) fields.set(String(flat[i]), flat[i + 1]);
      return fields;
    })
    .find((fields) => fields.get('name') === ORDER_GROUP);
  return {
    pending: Number(group?.get('pending') ?? 0),
    // null lag: Redis cannot tell (after deletions); treat as not drained.
    undelivered: group?.get('lag') === null ? Number.NaN : Number(group?.get('lag') ?? 0),
    deadLetters: await redis.xlen(keys.dead),
  };
}

/**
 * What the order pipelines hold at this moment: entries delivered to a consumer and not acknowledged
 * (XPENDING), per consumer — while the pipelines' transactions are held, entries they have read and
 * not recorded — and entries not delivered yet (which only Redis has).
 */
export async function heldByPipelines(redis: Redis, saleId: string) {
  const { stream } = saleKeys(saleId);
  const [count, , , consumers] = (await redis.xpending(stream, ORDER_GROUP)) as [
    number,
    string | null,
    string | null,
    Array<[string, string]> | null,
  ];
  const { undelivered } = await backlog(redis, saleId);
  return {
    pending: Number(count),
    perConsumer: Object.fromEntries((consumers ?? []).map(([name, n]) => [name, Number(n)])),
    undelivered,
  };
}

/**
 * Waits (bounded polling) until the pipeline has recorded everything of the sale: nothing pending,
 * nothing undelivered. Resolves false if that did not happen within `timeoutMs` — the checker then
 * reports the sale as not drained rather than hiding it.
 */
export async function waitForDrain(redis: Redis, saleId: string, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { pending, undelivered } = await backlog(redis, saleId);
    if (pending === 0 && undelivered === 0) return true;
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * What Redis and the record say about a sale once the run is over. The sale's stock and limit are read
 * too, for the checker to compare with what the harness created (it never takes them from here).
 */
export async function readFinalState(
  urls: { redis: string; database: string },
  saleId: string,
  drained: boolean,
  problems: string[],
): Promise<FinalState> {
  const redis = new Redis(urls.redis);
  const db = new pg.Client({ connectionString: urls.database });
  await db.connect();
  try {
    const totals = (
      await db.query<{ stock: number; sold: number; per_user_limit: number }>(SALE_TOTALS, [saleId])
    ).rows[0];
    if (!totals) throw new Error(`sale ${saleId} is not in the record`);
    const orders = (
      await db.query<{ id: string; user_id: string; quantity: number; status: string }>(SALE_ORDERS, [saleId])
    ).rows.map((row): RecordedOrder => ({
      id: row.id,
      userId: row.user_id,
      quantity: row.quantity,
      status: row.status,
    }));
    const remaining = await redis.get(saleKeys(saleId).stock);
    return {
      orders,
      recordedSold: totals.sold,
      recordedStock: totals.stock,
      recordedPerUserLimit: totals.per_user_limit,
      redisRemaining: remaining === null ? null : Number(remaining),
      ...(await backlog(redis, saleId)),
      drained,
      processProblems: problems,
    };
  } finally {
    await db.end();
    redis.disconnect();
  }
}
