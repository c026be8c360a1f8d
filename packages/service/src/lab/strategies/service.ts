import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { OrderPipeline } from '../../sale/pipeline/order-pipeline.js';
import { Reserver } from '../../sale/reserve.js';
import { SaleService } from '../../sale/service.js';
import type { LabEnv, LabRun, Strategy } from '../types.js';
import { labQueries } from '../sql/queries.js';

const ids = new WeakMap<LabEnv, SnowflakeIdGenerator>();

/** One snowflake generator per process (it leases a worker id). */
async function idsFor(env: LabEnv): Promise<SnowflakeIdGenerator> {
  let generator = ids.get(env);
  if (!generator) {
    generator = new SnowflakeIdGenerator(env.sale);
    await generator.start();
    ids.set(env, generator);
  }
  return generator;
}

const saleIdOf = (run: LabRun) => String(run.options.saleId);

/** lockstock's own sale path: one atomic reservation script, the order pipeline, PostgreSQL fences. */
export const service: Strategy = {
  name: 'service',
  title: 'lockstock service (reservation script + pipeline)',
  claim:
    'lockstock’s sale service, what the flash-sale posts recommend done right: one Lua script checks window, stock and the per-user limit and appends the order to a stream; a consumer group writes orders to PostgreSQL, which fences stock and limits again.',
  expectation: 'correct',
  async prepare(env, run) {
    const generator = await idsFor(env);
    const sale = await new SaleService({
      context: env.sale,
      db: env.db,
      nextOrderId: () => generator.next(),
    }).createSale({
      name: `lab ${run.runId}`,
      stock: run.stock,
    });
    return { saleId: sale.id };
  },
  async buyer(env, run) {
    const generator = await idsFor(env);
    const reserver = new Reserver(env.sale, () => generator.next());
    return async (buyer) =>
      (await reserver.reserve({ saleId: saleIdOf(run), userId: buyer, quantity: 1 })).ok;
  },
  async inspect(env, run) {
    // The record is PostgreSQL: drain the pipeline first, then read the confirmed orders.
    const pipeline = new OrderPipeline(env.sale, env.db);
    await pipeline.drain();
    await pipeline.stop();
    const orders = await env.pg.query<{ user_id: string }>(labQueries.serviceConfirmedBuyers, [
      saleIdOf(run),
    ]);
    const remaining = await env.redis.get(env.sale.keys.sale(saleIdOf(run)).stock);
    return { orders: orders.rows.map((r) => r.user_id), finalStock: Number(remaining) };
  },
};
