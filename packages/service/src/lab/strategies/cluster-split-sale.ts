import { OrderPipeline } from '../../sale/pipeline/order-pipeline.js';
import { Reserver } from '../../sale/reserve.js';
import { SaleService } from '../../sale/service.js';
import { layoutKeys, layoutOf } from '../../sale/shards/layout.js';
import { records } from '../../sale/store/records.js';
import { labQueries } from '../sql/queries.js';
import type { Strategy } from '../types.js';
import { clusterClient, clusterContext, clusterIds, labCluster, stopLabCluster } from './cluster.js';

const saleIdOf = (options: Readonly<Record<string, unknown>>) => String(options.saleId);
const pressesOf = (options: Readonly<Record<string, unknown>>) => Number(options.presses ?? 2);

/**
 * lockstock's split sale on the same Cluster as cluster-naive-split: the sale service's reservation
 * per part, buyers routed by user, units moved between parts, sold out only when every part is.
 */
export const clusterSplitSale: Strategy = {
  name: 'cluster-split-sale',
  title: 'lockstock split sale (shards: K): parts on K masters, buyers routed by user, units moved',
  claim:
    'lockstock’s split sale (the `shards` of a sale): the stock in K parts placed on K masters by slot ownership; a buyer always in the part of its user id (limit and key exact in one script); a part that runs dry takes units from the others (debit, credit once, finish); "sold out" only when a double collect finds every part empty.',
  expectation: 'correct',
  note: 'Same Cluster, same presses as the naive split: no buyer told sold out while units were left, nothing left unsold, nobody buying twice. The buyer whose part ran dry pays the transfer: a few round trips, measured by lockstock bench sale --shards and the multi-process test.',
  async prepare(env, run) {
    const nodes = await labCluster();
    const ids = await clusterIds(nodes);
    const service = new SaleService({
      context: clusterContext(nodes),
      db: env.db,
      nextOrderId: () => ids.next(),
      soldOutCache: false,
    });
    const sale = await service.createSale({
      name: `lab ${run.runId}`,
      stock: run.stock,
      shards: Number(run.options.segments ?? 3),
    });
    await service.close();
    return { cluster: nodes, saleId: sale.id };
  },
  async buyer(_env, run) {
    const nodes = String(run.options.cluster);
    const ids = await clusterIds(nodes);
    const reserver = new Reserver(clusterContext(nodes), () => ids.next());
    const presses = pressesOf(run.options);
    return async (buyer) => {
      let bought = false;
      for (let press = 0; press < presses; press++) {
        const result = await reserver.reserve({ saleId: saleIdOf(run.options), userId: buyer, quantity: 1 });
        bought ||= result.ok;
      }
      return bought;
    };
  },
  async inspect(env, run) {
    const nodes = String(run.options.cluster);
    const redis = clusterClient(nodes);
    const pipeline = new OrderPipeline(clusterContext(nodes), env.db);
    await pipeline.drain();
    await pipeline.stop();
    const saleId = saleIdOf(run.options);
    const orders = await env.pg.query<{ user_id: string }>(labQueries.serviceConfirmedBuyers, [saleId]);
    const times = await env.pg.query<{ ms: string }>(labQueries.serviceSaleTimes, [saleId]);
    const sale = await records.getSale(env.db, saleId);
    let finalStock = 0;
    for (const keys of layoutKeys(layoutOf(saleId, sale?.partTags), clusterContext(nodes).prefix)) {
      const [stock, inflight] = await redis.mget(keys.stock, keys.inflight);
      finalStock += Number(stock ?? 0) + Number(inflight ?? 0);
    }
    return {
      orders: orders.rows.map((r) => r.user_id),
      finalStock,
      soldAtMs: times.rows.map((r) => Number(r.ms)),
    };
  },
  teardown: stopLabCluster,
};
