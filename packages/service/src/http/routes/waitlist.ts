import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SaleService } from '../../sale/service.js';
import type { WaitlistRefusalCode, WaitlistStanding } from '../../sale/waitlist/waitlist.js';
import type { PurchaseAdmission } from '../../sale/admission/purchase.js';
import { authenticate } from '../auth.js';
import { sendError } from '../errors.js';
import { errorResponses, ReservedBody, SaleIdParams, OrderHeaders } from '../schemas.js';
import { OfferHeaders, WaitlistLeftView, WaitlistStandingView } from '../waitlist-schemas.js';
import { requireAdmission } from '../admission.js';

export interface WaitlistRouteOptions {
  service: SaleService;
  /** Per-user rate check (after authentication); undefined when per-user limiting is off. */
  limitUser?: (request: FastifyRequest) => Promise<void>;
  /** What each sale's admission asks (a waiting room's sale lets only admitted buyers join its line: their admission, unspent). */
  admission?: PurchaseAdmission;
}

const MESSAGES: Record<WaitlistRefusalCode, string> = {
  not_found: 'There is no such sale.',
  not_started: 'The sale has not started yet.',
  ended: 'The sale has ended.',
  limit_reached: 'You already hold as many units of this sale as one buyer may.',
  not_sold_out: 'Units of this sale are on sale: buy one instead of joining the waitlist.',
  waitlist_unavailable: 'This sale has no waitlist (a sale split across Redis parts).',
  idempotency_key_reused: 'This Idempotency-Key was used for a different request.',
  no_offer: 'You hold no offer for this sale: join its waitlist, or wait for your turn.',
  offer_expired: 'Your offer ended unbought and passed to the next in line: join the waitlist again.',
};

function standingJson(standing: WaitlistStanding) {
  if (standing.state === 'offered') {
    return { state: standing.state, offerExpiresAt: new Date(standing.offerExpiresAt).toISOString() };
  }
  return standing;
}

const callerOf = (request: FastifyRequest) => request.caller as NonNullable<FastifyRequest['caller']>;

/**
 * The waitlist of a first-come sale (sale/waitlist/): a buyer told "sold out" joins; units that come
 * back are offered to the line in join order, each for a limited time; the offered buyer buys it here.
 */
export const waitlistRoutes: FastifyPluginAsyncTypebox<WaitlistRouteOptions> = async (
  app,
  { service, limitUser, admission },
) => {
  const waitlist = service.waitlist;
  const buyer = [authenticate, ...(limitUser ? [limitUser] : [])];
  /** A raffle sale answers every purchase "not started" (sale/keys.ts, purchasesNotBefore): say why instead. */
  const refused = async (reply: FastifyReply, saleId: string, code: WaitlistRefusalCode) => {
    const explained = admission ? admission.explain(saleId, code) : code;
    if ((typeof explained === 'string' ? explained : await explained) === 'raffle_sale') {
      return sendError(reply, 'raffle_sale', `Sale ${saleId} is a raffle: its own waitlist serves it.`);
    }
    return sendError(reply, code, MESSAGES[code]);
  };

  app.post(
    '/api/sales/:id/waitlist',
    {
      preHandler: [...buyer, ...(admission ? [requireAdmission(admission)] : [])],
      schema: {
        summary: 'Join the waitlist of a sold-out sale (one place per buyer; asking again keeps it)',
        description:
          'Units that come back (a cancelled or expired order) are offered to the line in join order, one unit per buyer, each for a limited time. A sale with a waiting room asks for the caller’s admission (header Admission), which joining does not spend. Refusals (409): not_sold_out, limit_reached, not_started, ended, raffle_sale, waitlist_unavailable.',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        headers: OrderHeaders,
        response: { 201: WaitlistStandingView, ...errorResponses(400, 401, 403, 404, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const joined = await waitlist.join(request.params.id, callerOf(request).userId);
      if ('ok' in joined) return refused(reply, request.params.id, joined.code);
      return reply.code(201).send(standingJson(joined));
    },
  );

  app.get(
    '/api/sales/:id/waitlist',
    {
      preHandler: buyer,
      schema: {
        summary:
          'Where the caller stands in the sale’s waitlist: waiting (place), offered (until when), none',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        response: { 200: WaitlistStandingView, ...errorResponses(400, 401, 429, 503) },
      },
    },
    async (request) => standingJson(await waitlist.standing(request.params.id, callerOf(request).userId)),
  );

  app.delete(
    '/api/sales/:id/waitlist',
    {
      preHandler: buyer,
      schema: {
        summary: 'Leave the waitlist, or decline the offer you hold (it passes to the next in line at once)',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        response: { 200: WaitlistLeftView, ...errorResponses(400, 401, 429, 503) },
      },
    },
    async (request) => ({ result: await waitlist.leave(request.params.id, callerOf(request).userId) }),
  );

  app.post(
    '/api/sales/:id/waitlist/orders',
    {
      preHandler: buyer,
      schema: {
        summary: 'Buy the unit the waitlist offers the caller (one unit; the offer is the pass)',
        description:
          'Refusals (409): no_offer, offer_expired (it passed on), limit_reached (it passed on), ended. The same Idempotency-Key from the same user returns the same order.',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        headers: OfferHeaders,
        response: { 202: ReservedBody, ...errorResponses(400, 401, 404, 409, 422, 429, 503) },
      },
    },
    async (request, reply) => {
      const idempotencyKey = request.headers['idempotency-key'];
      const bought = await waitlist.buy(
        request.params.id,
        callerOf(request).userId,
        idempotencyKey ? { idempotencyKey } : {},
      );
      if (!bought.ok) return refused(reply, request.params.id, bought.code);
      return reply.code(202).send({ orderId: bought.orderId, status: 'reserved' as const });
    },
  );
};
