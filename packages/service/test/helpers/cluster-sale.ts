import { Cluster } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { PostgresServer, RedisCluster } from '@lockstock/servers';
import { saleContext, type SaleContext } from '../../src/sale/context/context.js';
import { SnowflakeIdGenerator } from '../../src/sale/ids/snowflake.js';
import { createSaleMetrics } from '../../src/sale/metrics.js';
import { OrderPipeline } from '../../src/sale/pipeline/order-pipeline.js';
import { SaleService } from '../../src/sale/service.js';
import { postgresDatabase, type Database } from '../../src/sale/store/db.js';
import { migrate } from '../../src/sale/store/migrate.js';

/** A process's view of the sale on the Cluster: its own connection and sale context, pool, ids, service and metrics. */
export interface ClusterInstance {
  redis: Cluster;
  context: SaleContext;
  db: Database;
  service: SaleService;
  ids: SnowflakeIdGenerator;
  metrics: ReturnType<typeof createSaleMetrics>;
  close(): Promise<void>;
}

/**
 * A 3-master Redis Cluster and a PostgreSQL for a test file (migrated), and services on them: each
 * `instance()` has what a process would have of its own (closed after the file).
 */
export function useClusterSaleStack(masters = 3) {
  const state = {} as { cluster: RedisCluster; postgres: PostgresServer; first: ClusterInstance };
  const instances: ClusterInstance[] = [];
  const pipelines: OrderPipeline[] = [];

  async function instance(): Promise<ClusterInstance> {
    const redis = new Cluster(state.cluster.startupNodes);
    const context = saleContext(redis);
    const db = postgresDatabase(state.postgres.url);
    const ids = new SnowflakeIdGenerator(context);
    await ids.start();
    const metrics = createSaleMetrics();
    const service = new SaleService({ context, db, nextOrderId: () => ids.next(), metrics });
    const made: ClusterInstance = {
      redis,
      context,
      db,
      service,
      ids,
      metrics,
      close: async () => {
        await service.close();
        await ids.stop();
        await db.close();
        redis.disconnect();
      },
    };
    instances.push(made);
    return made;
  }

  beforeAll(async () => {
    [state.cluster, state.postgres] = await Promise.all([
      RedisCluster.start({ masters }),
      PostgresServer.start(),
    ]);
    const db = postgresDatabase(state.postgres.url);
    await migrate(db);
    await db.close();
    state.first = await instance();
  });
  afterAll(async () => {
    await Promise.all(pipelines.map((p) => p.stop()));
    for (const made of instances) await made.close();
    await Promise.all([state.cluster?.stop(), state.postgres?.stop()]);
  });
  return {
    get cluster() {
      return state.cluster;
    },
    get postgres() {
      return state.postgres;
    },
    get redis() {
      return state.first.redis;
    },
    get context() {
      return state.first.context;
    },
    get db() {
      return state.first.db;
    },
    get service() {
      return state.first.service;
    },
    get metrics() {
      return state.first.metrics;
    },
    instance,
    pipeline(): OrderPipeline {
      const pipeline = new OrderPipeline(state.first.context, state.first.db);
      pipelines.push(pipeline);
      return pipeline;
    },
  };
}
