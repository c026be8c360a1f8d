import { Type } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';
import { checkHealth, type HealthDeps } from '../../sale/health.js';
import { RETRY_AFTER_SECONDS } from '../errors.js';

export interface HealthOptions extends HealthDeps {
  registry: Registry;
}

const State = Type.Union([Type.Literal('ok'), Type.Literal('down')]);

const Status = Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('down')], {
  description: 'down: Redis is down, nothing can be sold (503); degraded: selling works, the record lags',
});
const Pipeline = Type.Union([
  Type.Literal('ok'),
  Type.Literal('retrying'),
  Type.Literal('behind'),
  Type.Literal('unknown'),
]);
const Backlog = Type.Object({
  oldestUnrecordedMs: Type.Union([Type.Integer(), Type.Null()]),
  consumers: Type.Integer(),
  retryingForMs: Type.Union([Type.Integer(), Type.Null()]),
});

const Recovering = Type.Array(Type.String(), {
  description: 'sales this process does not sell now: being rebuilt from the record (503 until done)',
});
const Durability = Type.Object(
  {
    setting: Type.Union([Type.Literal('fsync'), Type.Literal('memory')]),
    redisAppendfsync: Type.Union([
      Type.Literal('always'),
      Type.Literal('everysec'),
      Type.Literal('no'),
      Type.Literal('off'),
      Type.Literal('unknown'),
    ]),
    honoured: Type.Boolean(),
    recordFsync: Type.Optional(
      Type.Union([Type.Literal('on'), Type.Literal('off'), Type.Literal('unknown')], {
        description: "whether the record's database syncs its commits to the disk",
      }),
    ),
  },
  { description: 'what a 202 means: fsync (on disk before the answer) or memory' },
);

export const HealthBody = Type.Object({
  status: Status,
  redis: State,
  database: State,
  pipeline: Pipeline,
  backlog: Backlog,
  recovering: Recovering,
  durability: Type.Optional(Durability),
});

/** A 503 is an error answer (`error`, `message`); from the check itself, with the report beside it. */
export const HealthUnavailableBody = Type.Object({
  error: Type.String(),
  message: Type.String(),
  status: Type.Optional(Status),
  redis: Type.Optional(State),
  database: Type.Optional(State),
  pipeline: Type.Optional(Pipeline),
  backlog: Type.Optional(Backlog),
  recovering: Type.Optional(Recovering),
  durability: Type.Optional(Durability),
});

/**
 * `GET /healthz` says what is degraded. Its status is for load balancers: 503 (with Retry-After) only
 * when this process cannot sell — Redis is down. The database and the pipeline being down or behind
 * is 200 `degraded`: purchases need only Redis and wait in the streams until the record is back, so
 * taking every instance out of rotation then would stop a sale that can go on.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthOptions> = async (app, options) => {
  const { registry, ...deps } = options;
  app.get(
    '/healthz',
    {
      // Probes must reach the check itself: not rate limited (the limiter needs Redis, too); one a
      // second per prober, not logged.
      config: { rateLimit: false },
      logLevel: 'silent',
      schema: {
        summary: 'What is degraded: redis, database, pipeline (200 ok or degraded; 503 when Redis is down)',
        response: { 200: HealthBody, 503: HealthUnavailableBody },
      },
    },
    async (_request, reply) => {
      const report = await checkHealth(deps);
      if (report.status !== 'down') return report;
      // Still an error answer in the API's shape, with the report beside it.
      reply.code(503).header('retry-after', String(RETRY_AFTER_SECONDS));
      return {
        error: 'service_unavailable' as const,
        message: 'Redis is unavailable: nothing can be sold until it is back.',
        ...report,
      };
    },
  );

  app.get(
    '/metrics',
    {
      config: { rateLimit: false },
      // A scrape a second per Prometheus: not logged (nor traced: http/tracing.ts).
      logLevel: 'silent',
      schema: { summary: 'Prometheus metrics (text format)' },
    },
    async (_request, reply) => {
      return reply.type(registry.contentType).send(await registry.metrics());
    },
  );
};
