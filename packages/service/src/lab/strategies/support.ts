import type { LabEnv, LabRun, Strategy } from '../types.js';
import { labDatabase, type LabDatabase, type LabDatabaseName } from './databases.js';

/** Redis keys of a lab run; one hash tag per run keeps a strategy's keys on one Cluster slot. */
export const labKeys = (runId: string) => ({
  stock: `lab:{${runId}}:stock`,
  orders: `lab:{${runId}}:orders`,
  lock: `lab-${runId}`, // a lock *name* (lockstock builds its keys)
  raw: `lab:{${runId}}:lock`, // a hand-rolled lock key
  hash: `lab:{${runId}}:inventory`,
  segment: (i: number) => `lab:{${runId}}:stock:${i}`,
});

export async function prepareRedisStock(env: LabEnv, run: LabRun): Promise<void> {
  await env.redis.set(labKeys(run.runId).stock, run.stock);
}

export async function inspectRedis(
  env: LabEnv,
  run: LabRun,
): Promise<{ orders: string[]; finalStock: number }> {
  const keys = labKeys(run.runId);
  return {
    orders: await env.redis.lrange(keys.orders, 0, -1),
    finalStock: Number((await env.redis.get(keys.stock)) ?? 0),
  };
}

/** The order record of Redis strategies: one list entry per sale, as the seed code's "create order". */
export const recordRedisOrder = (env: LabEnv, run: LabRun, buyer: string) =>
  env.redis.rpush(labKeys(run.runId).orders, buyer);

export async function prepareSqlStock(db: LabDatabase, run: LabRun): Promise<void> {
  await db.prepare();
  await db.query('insertStock', [run.runId, run.stock]);
}

export async function inspectSql(
  db: LabDatabase,
  run: LabRun,
): Promise<{ orders: string[]; finalStock: number }> {
  const orders = await db.query<{ buyer: string }>('listOrders', [run.runId]);
  const stock = await db.query<{ stock: number }>('readStock', [run.runId]);
  return { orders: orders.rows.map((r) => r.buyer), finalStock: stock.rows[0]?.stock ?? 0 };
}

/** A strategy's `prepare` and `inspect` when its stock and orders are rows on `database`. */
export const sqlRecord = (database: LabDatabaseName) =>
  ({
    prepare: (env, run) => prepareSqlStock(labDatabase(env, database), run),
    inspect: (env, run) => inspectSql(labDatabase(env, database), run),
  }) satisfies Pick<Strategy, 'prepare' | 'inspect'>;

/**
 * Gives other buyers a chance to run between a read and the write that depends on it, as the
 * network round trips of real code do. Without it a single process could serialise by accident.
 */
export const interleave = () => new Promise<void>((resolve) => setImmediate(resolve));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The seeds' unguarded read-check-write on Redis (GET, compare, SET, record the order): the section
 * every Redis strategy either runs bare or guards. `workMs` stands for the order's other work (a
 * payment call) between the read and the write; without it the buyers merely interleave.
 */
export async function redisReadCheckWrite(env: LabEnv, run: LabRun, buyer: string, workMs = 0) {
  const key = labKeys(run.runId).stock;
  const stock = Number(await env.redis.get(key));
  if (stock <= 0) return false;
  await (workMs > 0 ? sleep(workMs) : interleave());
  await env.redis.set(key, stock - 1);
  await recordRedisOrder(env, run, buyer);
  return true;
}

/** The same read-check-write in SQL (SELECT, compare, UPDATE to the computed value, INSERT the order). */
export async function sqlReadCheckWrite(db: LabDatabase, run: LabRun, buyer: string) {
  const { rows } = await db.query<{ stock: number }>('readStock', [run.runId]);
  const stock = rows[0]?.stock ?? 0;
  if (stock < 1) return false;
  await interleave();
  await db.query('writeStock', [run.runId, stock - 1]);
  await db.query('insertOrder', [run.runId, buyer]);
  return true;
}
