import type { SaleContext } from '../sale/context/context.js';
import { nameOperations, TAGS } from './openapi.js';
import { registerRequestTracing } from './tracing.js';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { collectDefaultMetrics } from 'prom-client';
import type { SaleActivity } from '../sale/activity.js';
import type { PipelineHealth } from '../sale/pipeline/order-pipeline.js';
import type { SaleMetrics } from '../sale/metrics.js';
import type { SaleService } from '../sale/service.js';
import { readSaleStats } from '../sale/stats.js';
import type { Database } from '../sale/store/db.js';
import { registerAuth } from './auth.js';
import type { HttpConfig } from './config.js';
import { LiveFeed } from './dashboard/feed.js';
import { dashboardRoutes } from './dashboard/routes.js';
import {
  clientErrorHandler,
  createErrorHandler,
  frameworkErrors,
  sendError,
  sendUnavailable,
} from './errors.js';
import { registerRateLimits } from './rate-limit.js';
import { RequestDurations } from './request-durations.js';
import { gatedServerFactory, ORDERS_ROUTE, soldOutGate } from './sold-out-gate.js';
import { healthRoutes } from './routes/health.js';
import type { DurabilityReport } from '../sale/health.js';
import { orderActionsRoutes } from './routes/order-actions.js';
import { ordersRoutes } from './routes/orders.js';
import { roomRoutes } from './routes/room.js';
import { waitlistRoutes } from './routes/waitlist.js';
import { WaitingRoom } from '../sale/room/room.js';
import { purchaseAdmission } from '../sale/admission/purchase.js';
import { raffleRoutes } from './routes/raffle.js';
import { RaffleService } from '../sale/raffle/raffles.js';
import { salesRoutes } from './routes/sales.js';
import { ErrorBody } from './schemas.js';
import { DependencyLog } from './dependency-log.js';
import { silentLogger } from '../sale/logger.js';
import { loadServiceKey } from '../sale/store/signing-key.js';

export interface AppDeps {
  service: SaleService;
  /** The process's sale context (its Redis connection and key prefix among it). */
  context: SaleContext;
  db: Database;
  metrics: SaleMetrics;
  config: HttpConfig;
  /**
   * Counts purchase outcomes and visitors for the dashboard (buffered, written to Redis about once a
   * second; the caller starts and closes it). None: the dashboard shows no attempts or visitors.
   */
  activity?: SaleActivity;
  /** A pino logger for requests (none: no request logging). */
  logger?: FastifyBaseLogger;
  /** The order pipelines running in this process, for /healthz (none: `serve --workers 0`). */
  pipelines?: () => readonly PipelineHealth[];
  /** Sales this process does not sell now (being rebuilt from the record), for /healthz. */
  recovering?: () => readonly string[];
  /**
   * Raffle sales, with the process's beacon source (none: one is made on `context` and `db`, without
   * a beacon: a draw waiting for its round then stays `awaiting_beacon` here).
   */
  raffles?: RaffleService;
  /** What a 202 means here, for /healthz. */
  durability?: DurabilityReport;
  /** Where dependency outages are logged, once each (none: one on `logger`). */
  dependencies?: DependencyLog;
}

/**
 * Server-level limits: small bodies, bounded request time (slow clients cannot hold sockets). What
 * Fastify and Node answer before any route runs (a bad URL, a parameter over maxParamLength, headers
 * over maxHeaderSize, a request timeout) is answered in the API's error shape too.
 */
export const SERVER_OPTIONS = {
  bodyLimit: 16 * 1024,
  requestTimeout: 10_000,
  connectionTimeout: 10_000,
  keepAliveTimeout: 5_000,
  routerOptions: { maxParamLength: 100 },
  onProtoPoisoning: 'error',
  onConstructorPoisoning: 'error',
  trustProxy: false,
  frameworkErrors,
  clientErrorHandler,
  // While closing, requests still arriving on open connections get our 503 (see buildApp).
  return503OnClosing: false,
} as const satisfies FastifyServerOptions;

/**
 * The HTTP API as a Fastify instance that does not listen (server.ts does): tests use inject().
 * Validation is strict: no type coercion, unknown fields are errors (not silently dropped).
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  let closing = false;
  const durations = RequestDurations.in(deps.metrics.registry);
  const gate = soldOutGate({
    refuse: (saleId) => deps.service.refuseFromMemory(saleId) !== undefined,
    closing: () => closing,
    answered: (saleId, seconds) => {
      deps.activity?.attempt(saleId, 'sold_out');
      durations.record('POST', ORDERS_ROUTE, 409, seconds);
    },
  });
  const app = Fastify({
    ...SERVER_OPTIONS,
    serverFactory: gatedServerFactory(gate, SERVER_OPTIONS),
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    ajv: {
      customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: false },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.removeContentTypeParser('text/plain'); // bodies are JSON; anything else is a 415
  // `Content-Type: application/json` with no body at all (curl -X POST -H 'Content-Type: ...' and
  // no -d, a client that always sends the header) is a request without a body, as if the header were
  // absent: the routes whose body is optional (buy, pay, cancel, reconcile) take it; a route that
  // needs one says so in its 400. Fastify's own parser, kept for everything else (prototype
  // poisoning refused as configured), answered 400 to it.
  const parseJson = app.getDefaultJsonParser(
    SERVER_OPTIONS.onProtoPoisoning,
    SERVER_OPTIONS.onConstructorPoisoning,
  );
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text === '') done(null, undefined);
    else void parseJson(request, text, done);
  });
  const dependencies = deps.dependencies ?? new DependencyLog(deps.logger ?? silentLogger);
  app.setErrorHandler(createErrorHandler(deps.metrics.registry, dependencies));
  app.addHook('preClose', async () => {
    closing = true;
  });
  // First of the onRequest hooks (before rate limits touch Redis). A callback hook: it runs on every
  // request and has nothing to wait for, so it costs no promise.
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    reply.header('connection', 'close');
    sendUnavailable(reply, 'This server is shutting down; retry (another instance will answer).');
  });
  registerRequestTracing(app);
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, 'not_found', `No route ${request.method} ${request.url}.`),
  );
  app.addSchema(ErrorBody);
  registerHttpMetrics(app, deps.metrics, durations);

  await app.register(swagger, {
    openapi: {
      info: { title: 'lockstock flash-sale API', version: '1' },
      tags: [...TAGS],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
    },
    // Shared schemas keep their $id as their name in the document (`Error`, not `def-0`).
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `Schema${i}`,
    },
  });
  nameOperations(app);
  // The API reference page (Swagger UI) and the OpenAPI document, /docs and /docs/json: its assets
  // are served from the package (no CDN), so the page works offline and on a locked-down network.
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // Only this server: no CDN, no inline script (Swagger UI sets inline styles on its elements).
    staticCSP:
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
      "connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'",
    uiConfig: { docExpansion: 'list', deepLinking: true, tryItOutEnabled: false },
  });
  registerAuth(app, deps.config.jwtSecret);
  const { perUser, limitUser } = registerRateLimits(app, deps.context, {
    perIp: deps.config.rateLimitPerIp,
    perUser: deps.config.rateLimitPerUser,
  });
  const activity = deps.activity ? { activity: deps.activity } : {};
  // Admissions are signed with the service's one key, from the record (sale/store/signing-key.ts).
  const serviceKey = await loadServiceKey(deps.db);
  const room = new WaitingRoom(deps.context, deps.service.rooms, deps.config.jwtSecret, serviceKey);
  await app.register(salesRoutes, { service: deps.service, ...activity });
  await app.register(roomRoutes, { room });
  // The purchase side of every sale's admission: the routes never ask which one a sale runs.
  const admission = purchaseAdmission(room, {
    isRaffle: async (saleId) => (await deps.service.getSale(saleId))?.admission === 'raffle',
  });
  await app.register(ordersRoutes, {
    service: deps.service,
    ...(perUser ? { perUser } : {}),
    ...activity,
    admission,
  });
  await app.register(orderActionsRoutes, { service: deps.service });
  await app.register(waitlistRoutes, {
    service: deps.service,
    ...(limitUser ? { limitUser } : {}),
    admission,
  });
  const raffles = deps.raffles ?? new RaffleService({ context: deps.context, db: deps.db });
  await app.register(raffleRoutes, { raffles });
  await app.register(healthRoutes, {
    context: deps.context,
    db: deps.db,
    registry: deps.metrics.registry,
    ...(deps.pipelines ? { pipelines: deps.pipelines } : {}),
    ...(deps.recovering ? { recovering: deps.recovering } : {}),
    ...(deps.durability ? { durability: deps.durability } : {}),
  });
  const feed = new LiveFeed({
    read: async () => {
      const sales = await readSaleStats(deps);
      const raffleOf = await raffles.summaries(sales.map((sale) => sale.id));
      const rooms = await Promise.all(sales.map((sale) => room.stats(sale.id)));
      return sales.map((sale, i) => {
        const raffle = raffleOf.get(sale.id);
        const roomStats = rooms[i];
        return { ...sale, ...(raffle ? { raffle } : {}), ...(roomStats ? { room: roomStats } : {}) };
      });
    },
    // Its ticks fail every second while Redis is down: that outage is one line (dependency-log.ts).
    ...(deps.logger ? { logger: dependencies.quiet(deps.logger) } : {}),
  });
  await app.register(dashboardRoutes, {
    feed,
    context: deps.context,
    db: deps.db,
    service: deps.service,
    jwtSecret: deps.config.jwtSecret,
    demoBuyers: deps.config.demoBuyers ?? false,
  });
  return app;
}

function registerHttpMetrics(app: FastifyInstance, metrics: SaleMetrics, durations: RequestDurations): void {
  const { registry } = metrics;
  if (!registry.getSingleMetric('process_cpu_seconds_total')) collectDefaultMetrics({ register: registry });
  app.addHook('onResponse', (request, reply, done) => {
    durations.record(
      request.method,
      request.routeOptions.url ?? 'unknown',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
}
