import { Redis } from 'ioredis';
import { saleContext } from '../../sale/context/context.js';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { OrderPipeline } from '../../sale/pipeline/order-pipeline.js';
import { Reserver } from '../../sale/reserve.js';
import { SaleService } from '../../sale/service.js';
import type { Database } from '../../sale/store/db.js';
import { measureInTurn } from './order.js';

/**
 * Orders recorded per second: `orders` reservations are queued first, then the pipeline drains them
 * in batches of `batchSize`. The baseline records the same kind of orders one transaction per order
 * (what a consumer that saves each message as it comes does), into a sale of its own. Which of the two
 * runs first (and so into the smaller tables) alternates with `runIndex`, the run's 0-based number (see inRunOrder).
 */
export async function benchPipeline(
  redisUrl: string,
  db: Database,
  options: { orders: number; batchSize: number; baselineOrders: number; runIndex: number },
): Promise<{ library: number; baseline: number }> {
  const redis = new Redis(redisUrl);
  const context = saleContext(redis);
  const ids = new SnowflakeIdGenerator(context);
  await ids.start();
  const service = new SaleService({ context, db, nextOrderId: () => ids.next() });
  const run = Date.now().toString(36);

  const library = async () => {
    const sale = await service.createSale({ name: 'bench pipeline', stock: 10_000_000 });
    const reserver = new Reserver(context, () => ids.next());
    for (let i = 0; i < options.orders; i += 1000) {
      await Promise.all(
        Array.from({ length: Math.min(1000, options.orders - i) }, (_, j) =>
          reserver.reserve({ saleId: sale.id, userId: `p${run}x${i + j}`, quantity: 1 }),
        ),
      );
    }
    const pipeline = new OrderPipeline(context, db, { batchSize: options.batchSize });
    const started = performance.now();
    const recorded = await pipeline.drain();
    const perSec = (recorded * 1000) / (performance.now() - started);
    await pipeline.stop();
    return perSec;
  };

  const baseline = async () => {
    const baselineSale = await service.createSale({ name: 'bench row-at-a-time', stock: 10_000_000 });
    const baselineStarted = performance.now();
    for (let i = 0; i < options.baselineOrders; i++) {
      await db.transaction(async (tx) => {
        await tx.query('UPDATE sales SET sold = sold + 1 WHERE id = $1 AND sold + 1 <= stock', [
          baselineSale.id,
        ]);
        await tx.query(
          `INSERT INTO orders (id, sale_id, user_id, quantity, status, stream_id, reserved_at)
           VALUES ($1, $2, $3, 1, 'confirmed', $4, now())`,
          [ids.next(), baselineSale.id, `b${run}x${i}`, `0-${i + 1}`],
        );
      });
    }
    return (options.baselineOrders * 1000) / (performance.now() - baselineStarted);
  };

  const measured = await measureInTurn({ library, baseline }, options.runIndex);
  await ids.stop();
  redis.disconnect();
  return measured;
}
