import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { SaleService } from '../../sale/service.js';
import type { OrderAction, OrderRefusalCode } from '../../sale/types.js';
import { authenticate } from '../auth.js';
import { ApiError } from '../errors.js';
import { errorResponses, OrderIdParams, OrderView } from '../schemas.js';
import { orderJson } from './orders.js';

const MESSAGES: Record<OrderRefusalCode, string> = {
  not_found: 'There is no such order of yours.',
  order_pending: 'The order is still being recorded; try again in a moment.',
  order_paid: 'The order is paid; it can no longer be cancelled.',
  order_cancelled: 'The order was cancelled; it can no longer be paid.',
  order_expired: 'The order expired unpaid; its units went back on sale.',
  order_rejected: 'The order was rejected when it was recorded; there is nothing to pay or cancel.',
};

const SUMMARIES: Record<OrderAction, string> = {
  pay: 'Pay an order (its buyer; idempotent). There is no payment provider: the payment is recorded.',
  cancel: 'Cancel an unpaid order (its buyer; idempotent): its units go back on sale',
};

export interface OrderActionsRouteOptions {
  service: SaleService;
}

/** `POST /api/orders/:id/pay` and `/cancel`: 200 the order, 409 when its state forbids the action. */
export const orderActionsRoutes: FastifyPluginAsyncTypebox<OrderActionsRouteOptions> = async (
  app,
  { service },
) => {
  for (const action of ['pay', 'cancel'] as const) {
    app.post(
      `/api/orders/:id/${action}`,
      {
        preHandler: authenticate,
        bodyLimit: 1024,
        schema: {
          summary: SUMMARIES[action],
          security: [{ bearer: [] }],
          params: OrderIdParams,
          response: { 200: OrderView, ...errorResponses(400, 401, 404, 409, 429, 503) },
        },
      },
      async (request) => {
        const caller = request.caller as NonNullable<FastifyRequest['caller']>;
        const result = await service.act(request.params.id, caller.userId, action);
        if (!result.ok) throw new ApiError(result.code, MESSAGES[result.code]);
        return orderJson(result.order);
      },
    );
  }
};
