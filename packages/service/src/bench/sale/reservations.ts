import { Redis } from 'ioredis';
import { loadLuaScript } from 'lockstock/redis';
import { saleContext } from '../../sale/context/context.js';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { Reserver } from '../../sale/reserve.js';
import { SaleService } from '../../sale/service.js';
import type { Database } from '../../sale/store/db.js';
import { measureInTurn } from './order.js';

const baselineScript = loadLuaScript(new URL('./hm-dianping-seckill.lua', import.meta.url));

/** Runs `loops` async loops calling `attempt(n)` with distinct n for `durationMs`; attempts per second. */
async function drive(
  loops: number,
  durationMs: number,
  attempt: (n: number) => Promise<unknown>,
): Promise<number> {
  let n = 0;
  let stop = false;
  const timer = setTimeout(() => (stop = true), durationMs);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (!stop) await attempt(n++);
    }),
  );
  clearTimeout(timer);
  return (n * 1000) / (performance.now() - started);
}

/**
 * Reservations per second through lockstock's Reserver (all checks: idempotency, window, limit,
 * stock, pending record) vs the bare hm-dianping script, same Redis, default ioredis clients, distinct
 * users so that every attempt reserves (the costly path of both). Both are set up and warmed first;
 * which one is measured first alternates with `runIndex`, the run's 0-based number (see inRunOrder).
 */
export async function benchReservations(
  redisUrl: string,
  db: Database,
  options: { durationMs: number; loops: number; runIndex: number },
): Promise<{ library: number; baseline: number }> {
  const redis = new Redis(redisUrl);
  const context = saleContext(redis);
  const ids = new SnowflakeIdGenerator(context);
  await ids.start();
  const service = new SaleService({ context, db, nextOrderId: () => ids.next() });
  const sale = await service.createSale({ name: 'bench reservations', stock: 10_000_000 });
  const reserver = new Reserver(context, () => ids.next());
  const run = `${Date.now().toString(36)}`;
  await reserver.reserve({ saleId: sale.id, userId: `warm${run}`, quantity: 1 });

  const baselineClient = new Redis(redisUrl);
  await baselineClient.set(`seckill:stock:${run}`, 10_000_000);
  const sha = String(await baselineClient.script('LOAD', baselineScript.source));
  await baselineClient.evalsha(sha, 0, run, 'warm', '0');

  const { library, baseline } = await measureInTurn(
    {
      library: () =>
        drive(options.loops, options.durationMs, (n) =>
          reserver.reserve({ saleId: sale.id, userId: `u${run}x${n}`, quantity: 1 }),
        ),
      baseline: () =>
        drive(options.loops, options.durationMs, (n) =>
          baselineClient.evalsha(sha, 0, run, `u${n}`, String(n)),
        ),
    },
    options.runIndex,
  );
  await ids.stop();
  redis.disconnect();
  baselineClient.disconnect();
  return { library, baseline };
}
