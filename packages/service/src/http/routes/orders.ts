import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { SaleActivity } from '../../sale/activity.js';
import { outcomeOf } from '../../sale/outcomes.js';
import type { SaleService } from '../../sale/service.js';
import type { Order, RefusalCode } from '../../sale/types.js';
import { authenticate } from '../auth.js';
import type { PurchaseAdmission } from '../../sale/admission/purchase.js';
import { requireAdmission } from '../admission.js';
import { ApiError, sendError } from '../errors.js';
import { traceContextOf } from '../tracing.js';
import {
  answersFromMemory,
  SOLD_OUT_BODY,
  SOLD_OUT_CONTENT_TYPE,
  SOLD_OUT_MESSAGE,
} from '../sold-out-gate.js';
import {
  errorResponses,
  OrderBody,
  OrderHeaders,
  OrderIdParams,
  OrderView,
  ReservedBody,
  SaleIdParams,
} from '../schemas.js';

const REFUSAL_MESSAGES: Record<RefusalCode, string> = {
  not_found: 'There is no such sale.',
  not_started: 'The sale has not started yet.',
  ended: 'The sale has ended.',
  sold_out: SOLD_OUT_MESSAGE,
  limit_reached: 'You already hold as many units of this sale as one buyer may.',
  idempotency_key_reused: 'This Idempotency-Key was used for a different request.',
  admission_used:
    'Your admission has bought its order (one admission, one order): join the waiting room again to buy more.',
  admission_not_yet: 'Your admission is not valid yet: it becomes valid at its admissionValidFrom.',
  admission_expired: 'Your admission lapsed unused: join the room again.',
};

/** The fast path's answer, serialised once: a JSON string is sent as it is. */
function sendSoldOut(reply: FastifyReply): void {
  void reply.code(409).type(SOLD_OUT_CONTENT_TYPE).send(SOLD_OUT_BODY);
}

export interface OrdersRouteOptions {
  service: SaleService;
  /**
   * Purchase attempts per second per user and sale, counted by the reservation itself (Reserver's
   * attemptsPerSecond); undefined when per-user limiting is off.
   */
  perUser?: number;
  /** Counts attempts by outcome and buyers as visitors (the dashboard); none: not counted. */
  activity?: SaleActivity;
  /**
   * What each sale's admission asks of a purchase (a waiting room's admission) and how it explains a
   * refusal (a raffle's). None: every sale is first come.
   */
  admission?: PurchaseAdmission;
}

export const ordersRoutes: FastifyPluginAsyncTypebox<OrdersRouteOptions> = async (
  app,
  { service, perUser, activity, admission },
) => {
  let quietLogger: FastifyBaseLogger | undefined;
  const admitted = admission ? [requireAdmission(admission)] : [];
  app.post(
    '/api/sales/:id/orders',
    {
      // The sold-out fast path, before the body is read or the token checked: a sale this process
      // knows to be sold out is answered from memory (that it is sold out is public: GET /api/sales/:id
      // says so). A retry with an Idempotency-Key goes on: it must get its original order back, and so
      // does a purchase with an admission (its active slot is freed on the way). A
      // listening server answers these in front of Fastify already (sold-out-gate.ts); this hook is
      // the same answer for requests that reach Fastify otherwise (inject(), a query string).
      onRequest: (request, reply, done) => {
        const { id } = request.params as { id: string };
        if (answersFromMemory(request.headers) && service.refuseFromMemory(id)) {
          activity?.attempt(id, 'sold_out'); // no visitor: nobody was authenticated
          sendSoldOut(reply);
          return;
        }
        done();
      },
      preValidation: (request, _reply, done) => {
        request.body ??= {}; // the body is optional: no body means one unit
        done();
      },
      preHandler: [authenticate, ...admitted],
      bodyLimit: 1024,
      // Two log lines per purchase would cost more than the purchase, and so does a child logger per
      // request: one warn-level logger serves them all (errors are still logged, without a request
      // id), and /metrics counts every attempt by outcome.
      childLoggerFactory: (logger) => (quietLogger ??= logger.child({}, { level: 'warn' })),
      schema: {
        summary: 'Buy: reserve units of a sale for the caller (the user id comes from the token)',
        description:
          'Refusals (409): not_started, ended, sold_out, limit_reached; raffle_sale for a sale created with admission "raffle" (enter at POST /api/sales/{id}/raffle/entries instead).',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        headers: OrderHeaders,
        body: OrderBody,
        response: { 202: ReservedBody, ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503) },
      },
    },
    async (request, reply) => {
      const caller = request.caller as NonNullable<FastifyRequest['caller']>;
      const idempotencyKey = request.headers['idempotency-key'];
      const result = await service.buy(
        {
          saleId: request.params.id,
          userId: caller.userId,
          quantity: request.body.quantity ?? 1,
          ...(idempotencyKey ? { idempotencyKey } : {}),
          ...(request.admittedAt === undefined ? {} : { admittedAt: request.admittedAt }),
          ...(perUser === undefined ? {} : { attemptsPerSecond: perUser }),
        },
        traceContextOf(request),
      );
      const outcome = outcomeOf(result);
      if (activity && outcome) {
        activity.attempt(request.params.id, outcome); // in memory: the purchase pays no round trip
        activity.visit(request.params.id, `u:${caller.userId}`);
      }
      // A refusal is an answer, not an exception: no Error (and stack trace) per sold-out attempt.
      if (!result.ok) {
        // As the sale's admission explains it: a raffle sale refuses every purchase "not started".
        const explained = admission ? admission.explain(request.params.id, result.code) : result.code;
        const code = typeof explained === 'string' ? explained : await explained;
        if (code === 'raffle_sale') {
          const id = request.params.id;
          return sendError(
            reply,
            code,
            `Sale ${id} is a raffle: enter at POST /api/sales/${id}/raffle/entries.`,
          );
        }
        return sendError(reply, code, REFUSAL_MESSAGES[code]);
      }
      return reply.code(202).send({ orderId: result.orderId, status: 'reserved' as const });
    },
  );

  app.get(
    '/api/orders/:id',
    {
      preHandler: authenticate,
      schema: {
        summary: 'An order (its buyer or an admin)',
        security: [{ bearer: [] }],
        params: OrderIdParams,
        response: { 200: OrderView, ...errorResponses(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const caller = request.caller as NonNullable<FastifyRequest['caller']>;
      const order = await service.getOrder(request.params.id);
      // Someone else's order answers exactly like a missing one: ids reveal nothing.
      if (!order || (order.userId !== caller.userId && !caller.admin)) {
        throw new ApiError('not_found', `There is no order ${request.params.id} of yours.`);
      }
      return orderJson(order);
    },
  );
};

/** An order as the API shows it (dates as ISO strings). */
export function orderJson(order: Order) {
  const { payBy, ...rest } = order;
  return { ...rest, ...(payBy ? { payBy: payBy.toISOString() } : {}) };
}
