import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { SaleActivity } from '../../sale/activity.js';
import { SaleInputError } from '../../sale/errors.js';
import type { Room } from '../../sale/room/store.js';
import type { SaleService } from '../../sale/service.js';
import type { SaleView as SaleViewType } from '../../sale/types.js';
import { requireAdmin } from '../auth.js';
import { ApiError } from '../errors.js';
import { errorResponses, NewSaleBody, SaleIdParams, SaleList, SaleListQuery, SaleView } from '../schemas.js';
import { visitorOf } from '../visitors.js';

/** A room's settings as a sale shows them (without what the scripts need: its opening time). */
const roomSettingsOf = ({ openAt: _openAt, ...settings }: Room) => settings;

const toJson = (sale: SaleViewType) => ({
  ...sale,
  startsAt: sale.startsAt.toISOString(),
  endsAt: sale.endsAt.toISOString(),
});

export interface SalesRouteOptions {
  service: SaleService;
  /** Counts who looks at a sale (the dashboard's visitors); none: not counted. */
  activity?: SaleActivity;
}

export const salesRoutes: FastifyPluginAsyncTypebox<SalesRouteOptions> = async (
  app,
  { service, activity },
) => {
  app.post(
    '/api/sales',
    {
      preHandler: requireAdmin,
      bodyLimit: 4096,
      schema: {
        summary: 'Create a sale (admin); its stock is pre-warmed in Redis',
        security: [{ bearer: [] }],
        body: NewSaleBody,
        response: { 201: SaleView, ...errorResponses(400, 401, 403, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      const { startsAt, endsAt, drawAt, ...rest } = request.body;
      try {
        const sale = await service.createSale({
          ...rest,
          ...(drawAt ? { drawAt: new Date(drawAt) } : {}),
          ...(startsAt ? { startsAt: new Date(startsAt) } : {}),
          ...(endsAt ? { endsAt: new Date(endsAt) } : {}),
        });
        return reply.code(201).send(toJson(sale));
      } catch (error) {
        if (error instanceof SaleInputError) throw new ApiError('bad_request', error.message);
        throw error;
      }
    },
  );

  app.get(
    '/api/sales',
    {
      schema: {
        summary: 'Sales, newest first, by status, a page at a time (`next` → `before`)',
        querystring: SaleListQuery,
        response: { 200: SaleList, ...errorResponses(400, 429) },
      },
    },
    async (request) => {
      const { status, before, limit } = request.query;
      const page = await service.listSales({
        ...(status ? { status } : {}),
        ...(before ? { before } : {}),
        limit: limit === undefined ? 20 : Number(limit),
      });
      return { sales: page.sales.map(toJson), ...(page.next ? { next: page.next } : {}) };
    },
  );

  app.get(
    '/api/sales/:id',
    {
      schema: {
        summary: 'A sale with its remaining stock and status',
        params: SaleIdParams,
        response: { 200: SaleView, ...errorResponses(400, 404, 429) },
      },
    },
    async (request) => {
      const sale = await service.getSale(request.params.id);
      if (!sale) throw new ApiError('not_found', `There is no sale ${request.params.id}.`);
      activity?.visit(sale.id, visitorOf(request));
      const room = await service.rooms.roomOf(sale.id);
      return toJson(typeof room === 'object' ? { ...sale, room: roomSettingsOf(room) } : sale);
    },
  );
};
