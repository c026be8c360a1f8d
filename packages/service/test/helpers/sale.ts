import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { saleContext, type SaleContext } from '../../src/sale/context/context.js';
import { createSaleMetrics } from '../../src/sale/metrics.js';
import { OrderPipeline, type OrderPipelineOptions } from '../../src/sale/pipeline/order-pipeline.js';
import { SnowflakeIdGenerator } from '../../src/sale/ids/snowflake.js';
import { SaleService } from '../../src/sale/service.js';
import { postgresDatabase, type Database } from '../../src/sale/store/db.js';
import { migrate } from '../../src/sale/store/migrate.js';
import { PostgresServer, RedisServer } from '@lockstock/servers';

/**
 * Real Redis + PostgreSQL for a test file, with a migrated database, a sale service and pipelines
 * that are stopped after the file.
 */
export function useSaleStack() {
  const state = {} as {
    redisServer: RedisServer;
    postgres: PostgresServer;
    redis: Redis;
    context: SaleContext;
    db: Database;
    ids: SnowflakeIdGenerator;
    service: SaleService;
    metrics: ReturnType<typeof createSaleMetrics>;
  };
  const pipelines: OrderPipeline[] = [];
  const instances: SaleInstance[] = [];
  beforeAll(async () => {
    [state.redisServer, state.postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
    state.redis = new Redis(state.redisServer.url);
    state.context = saleContext(state.redis);
    state.db = postgresDatabase(state.postgres.url);
    await migrate(state.db);
    state.ids = new SnowflakeIdGenerator(state.context);
    await state.ids.start();
    state.metrics = createSaleMetrics();
    state.service = new SaleService({
      context: state.context,
      db: state.db,
      nextOrderId: () => state.ids.next(),
      metrics: state.metrics,
    });
  });
  afterAll(async () => {
    await Promise.all(pipelines.map((p) => p.stop()));
    for (const instance of instances) await instance.close();
    await state.service.close();
    await state.ids.stop();
    await state.db.close();
    state.redis.disconnect();
    await Promise.all([state.redisServer.stop(), state.postgres.stop()]);
  });
  return {
    get redis() {
      return state.redis;
    },
    /** The file's sale context on `redis` (what a process builds once: context/context.ts). */
    get context() {
      return state.context;
    },
    get db() {
      return state.db;
    },
    get service() {
      return state.service;
    },
    get metrics() {
      return state.metrics;
    },
    get redisUrl() {
      return state.redisServer.url;
    },
    get databaseUrl() {
      return state.postgres.url;
    },
    pipeline(options: OrderPipelineOptions = {}): OrderPipeline {
      const pipeline = new OrderPipeline(state.context, state.db, { metrics: state.metrics, ...options });
      pipelines.push(pipeline);
      return pipeline;
    },
    /**
     * Another service on the same servers, with what another process would have of its own: a Redis
     * connection and its sale context, a PostgreSQL pool, an id generator, a sold-out cache and metrics (closed after the file).
     * Commands of two instances reach Redis on two connections, so their scripts interleave as the
     * server schedules them; one connection would run them in the order they were sent.
     */
    async instance(): Promise<SaleInstance> {
      const redis = new Redis(state.redisServer.url);
      const context = saleContext(redis);
      const db = postgresDatabase(state.postgres.url);
      const ids = new SnowflakeIdGenerator(context);
      await ids.start();
      const metrics = createSaleMetrics();
      const service = new SaleService({ context, db, nextOrderId: () => ids.next(), metrics });
      const instance = {
        redis,
        context,
        db,
        service,
        metrics,
        close: async () => {
          await service.close();
          await ids.stop();
          await db.close();
          redis.disconnect();
        },
      };
      instances.push(instance);
      return instance;
    },
  };
}

export interface SaleInstance {
  redis: Redis;
  context: SaleContext;
  db: Database;
  service: SaleService;
  metrics: ReturnType<typeof createSaleMetrics>;
  close(): Promise<void>;
}
