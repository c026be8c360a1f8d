import type { FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';
import type { RedisClient } from 'lockstock/redis';
import type { Database } from '../../sale/store/db.js';

export interface HealthOptions {
  redis: RedisClient;
  db: Database;
  registry: Registry;
}

export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, { redis, db, registry }) => {
  app.get(
    '/healthz',
    { schema: { summary: 'Liveness and dependencies (200 ok / 503)' } },
    async (_request, reply) => {
      const check = async (probe: () => Promise<unknown>) =>
        probe().then(
          () => 'ok' as const,
          () => 'down' as const,
        );
      const [redisState, databaseState] = await Promise.all([
        check(() => redis.ping()),
        check(() => db.query('SELECT 1')),
      ]);
      const ok = redisState === 'ok' && databaseState === 'ok';
      return reply
        .code(ok ? 200 : 503)
        .send({ status: ok ? 'ok' : 'degraded', redis: redisState, database: databaseState });
    },
  );

  app.get(
    '/metrics',
    { schema: { summary: 'Prometheus metrics (text format)' } },
    async (_request, reply) => {
      return reply.type(registry.contentType).send(await registry.metrics());
    },
  );
};
