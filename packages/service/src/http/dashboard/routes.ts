import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SaleContext } from '../../sale/context/context.js';
import { reconcile } from '../../sale/reconcile.js';
import type { SaleService } from '../../sale/service.js';
import type { Database } from '../../sale/store/db.js';
import { requireAdmin, signToken } from '../auth.js';
import { ApiError } from '../errors.js';
import { errorResponses } from '../schemas.js';
import { loadDashboardAssets, loadVendorAssets, type Asset } from './assets.js';
import type { LiveFeed } from './feed.js';
import { RedisHistory } from './history.js';
import { DashboardQuery, DashboardSnapshot, DemoToken, ReconcileBody, ReconcileReport } from './schemas.js';

export interface DashboardRouteOptions {
  feed: LiveFeed;
  context: SaleContext;
  db: Database;
  service: SaleService;
  jwtSecret: string;
  /** See HttpConfig.demoBuyers. */
  demoBuyers: boolean;
}

/** Demo tokens are short-lived: a demo, not an account. */
const DEMO_TOKEN_TTL_SECONDS = 3600;

/**
 * Scripts and styles only from this origin: the page has no inline script, and everything it loads
 * (its modules, uPlot) is served here. uPlot sizes its elements through the CSSOM, which CSP allows.
 */
const PAGE_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: Asset, cacheControl: string) {
  reply
    .header('cache-control', cacheControl)
    .header('etag', asset.etag)
    .header('x-content-type-options', 'nosniff');
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

const AssetParams = Type.Object({ file: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}\\.(js|css|svg)$' }) });

export const dashboardRoutes: FastifyPluginAsyncTypebox<DashboardRouteOptions> = async (app, options) => {
  const { feed } = options;
  const { page, files } = loadDashboardAssets();
  const vendor = loadVendorAssets();
  const streams = new Set<ServerResponse>();
  // The history lives in this app's Redis, shared by every process; recorded while the app listens
  // (a `serve` process), so a reload shows the sale so far even if nobody watched.
  feed.useHistory(new RedisHistory(options.context.redis, { keyPrefix: options.context.prefix }));
  app.addHook('onListen', async () => feed.startRecording());

  // Live responses never end by themselves: end them before the server waits for its connections.
  app.addHook('preClose', async () => {
    feed.close();
    for (const response of streams) response.end();
  });

  app.get('/', { schema: { summary: 'The live dashboard (HTML)' } }, async (request, reply) => {
    if (!page) throw new ApiError('not_found', 'The dashboard page is not built (npm run build).');
    reply.header('content-security-policy', PAGE_POLICY).header('referrer-policy', 'no-referrer');
    return sendAsset(request, reply, page, 'no-cache');
  });

  app.get('/dashboard/:file', { schema: { hide: true, params: AssetParams } }, async (request, reply) => {
    const asset = files.get(request.params.file);
    if (!asset) throw new ApiError('not_found', `There is no dashboard file ${request.params.file}.`);
    return sendAsset(request, reply, asset, 'no-cache');
  });

  app.get('/vendor/:file', { schema: { hide: true, params: AssetParams } }, async (request, reply) => {
    const asset = vendor.get(request.params.file);
    if (!asset) throw new ApiError('not_found', `There is no vendored file ${request.params.file}.`);
    return sendAsset(request, reply, asset, 'public, max-age=86400');
  });

  app.get(
    '/api/dashboard',
    {
      schema: {
        summary:
          'Every recent sale with its live and recorded numbers (what the dashboard shows); with ' +
          '?history=1 also the charts of the last 10 minutes',
        querystring: DashboardQuery,
        response: { 200: DashboardSnapshot, ...errorResponses(400, 429, 503) },
      },
    },
    async (request) => {
      if (!request.query.history) return feed.current();
      const [snapshot, history] = await Promise.all([feed.current(), feed.points()]);
      return { ...snapshot, history };
    },
  );

  app.get(
    '/api/live',
    {
      schema: {
        summary:
          'Server-Sent Events: `history` on connect (the last 10 minutes, shared by every process), ' +
          'then a `tick` with the snapshot every second ' +
          '(`unavailable` when Redis or the database did not answer)',
      },
    },
    async (request, reply) => {
      if (feed.full) {
        throw new ApiError('service_unavailable', 'This process has as many live viewers as it takes.');
      }
      reply.hijack();
      const response = reply.raw;
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no', // nginx: pass events through as they come
      });
      response.write('retry: 2000\n\n');
      streams.add(response);
      const unsubscribe = feed.subscribe((chunk) => {
        // A browser that does not keep up is dropped rather than buffered; EventSource reconnects.
        if (response.writableLength > 1_000_000) response.destroy();
        else response.write(chunk);
      });
      response.on('close', () => {
        streams.delete(response);
        unsubscribe();
      });
      request.log.debug({ viewers: feed.subscriberCount }, 'live dashboard viewer connected');
    },
  );

  app.post(
    '/api/reconcile',
    {
      preValidation: async (request) => {
        request.body ??= {}; // no body: only report
      },
      preHandler: requireAdmin,
      bodyLimit: 1024,
      schema: {
        summary:
          'Compare Redis with the record for every open sale (admin); with repair, set Redis to what ' +
          'the record allows. Without repair nothing changes.',
        security: [{ bearer: [] }],
        body: ReconcileBody,
        response: { 200: ReconcileReport, ...errorResponses(400, 401, 403, 413, 415, 429, 503) },
      },
    },
    async (request) => {
      const repair = request.body.repair ?? false;
      const sales = await reconcile(
        { context: options.context, db: options.db, service: options.service },
        { repair },
      );
      return { repaired: repair, sales };
    },
  );

  app.post(
    '/api/demo/token',
    {
      schema: {
        summary: 'A bearer token for a fresh demo buyer (only when demo buyers are on, see LOCKSTOCK_DEMO)',
        response: { 201: DemoToken, ...errorResponses(403, 429) },
      },
    },
    async (_request, reply) => {
      if (!options.demoBuyers) {
        throw new ApiError(
          'forbidden',
          'Demo buyers are off on this server (LOCKSTOCK_DEMO=1 turns them on).',
        );
      }
      const userId = `demo-${randomBytes(6).toString('hex')}`;
      const token = signToken(options.jwtSecret, userId, { ttlSeconds: DEMO_TOKEN_TTL_SECONDS });
      const expiresAt = new Date(Date.now() + DEMO_TOKEN_TTL_SECONDS * 1000).toISOString();
      return reply.code(201).send({ userId, token, expiresAt });
    },
  );
};
