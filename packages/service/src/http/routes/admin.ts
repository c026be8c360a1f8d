import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { reconcile } from '../../sale/reconcile.js';
import type { SaleRedis } from '../../sale/redis.js';
import type { SaleService } from '../../sale/service.js';
import type { Database } from '../../sale/store/db.js';
import { requireAdmin } from '../auth.js';
import { errorResponses } from '../schemas.js';

const SaleDriftView = Type.Object({
  saleId: Type.String(),
  stock: Type.Integer(),
  redisRemaining: Type.Union([Type.Integer(), Type.Null()]),
  recordedUnits: Type.Integer(),
  inFlightUnits: Type.Integer(),
  drift: Type.Integer(),
  buyersBelowRecord: Type.Integer(),
  unscheduledOrders: Type.Integer(),
  condition: Type.String({ description: 'ok, missing or behind (recovery/inspect.ts)' }),
  repairedRemaining: Type.Optional(Type.Integer()),
});

export interface AdminRouteOptions {
  service: SaleService;
  redis: SaleRedis;
  db: Database;
}

/**
 * Operator actions on the running service. `lockstock reconcile` calls this when a `serve` owns the
 * data directory: the embedded record (PGlite) can be opened by one process only, the one serving.
 */
export const adminRoutes: FastifyPluginAsyncTypebox<AdminRouteOptions> = async (app, deps) => {
  app.post(
    '/api/admin/reconcile',
    {
      preHandler: requireAdmin,
      bodyLimit: 1024,
      schema: {
        summary: 'Compare Redis with the order record per open sale; with repair, fix Redis (admin)',
        security: [{ bearer: [] }],
        body: Type.Object(
          { repair: Type.Optional(Type.Boolean({ default: false })) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ sales: Type.Array(SaleDriftView) }),
          ...errorResponses(400, 401, 403, 413, 415, 429),
        },
      },
    },
    async (request) => ({ sales: await reconcile(deps, { repair: request.body.repair === true }) }),
  );
};
