import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RoomRefusal, RoomStanding, WaitingRoom } from '../../sale/room/room.js';
import { authenticate, requireAdmin } from '../auth.js';
import { ApiError, sendError } from '../errors.js';
import {
  ChallengeView,
  CheckBody,
  JoinBody,
  JwksView,
  RoomStatsView,
  StandingView,
} from '../room-schemas.js';
import { errorResponses, SaleIdParams } from '../schemas.js';

export interface RoomRouteOptions {
  room: WaitingRoom;
}

const iso = (ms: number) => new Date(ms).toISOString();

function standingJson(standing: RoomStanding) {
  const common = { ticket: standing.ticket, ticketExpiresAt: iso(standing.ticketExpiresAt) };
  if (standing.state === 'waiting') {
    return {
      state: standing.state,
      ...common,
      position: standing.position,
      estimatedWaitSeconds: standing.estimatedWaitSeconds,
      checkWithinMs: standing.checkWithinMs,
    };
  }
  return {
    state: standing.state,
    ...common,
    admission: standing.admission,
    admittedAt: iso(standing.admittedAt),
    admissionValidFrom: iso(standing.admissionValidFrom),
    admissionExpiresAt: iso(standing.admissionExpiresAt),
  };
}

const callerOf = (request: FastifyRequest) => request.caller as NonNullable<FastifyRequest['caller']>;
const refused = (reply: FastifyReply, refusal: RoomRefusal) =>
  sendError(reply, refusal.code, refusal.message);

/** The waiting room of a first-come sale (sale/room/): challenges, tickets, standing, counts. */
export const roomRoutes: FastifyPluginAsyncTypebox<RoomRouteOptions> = async (app, { room }) => {
  app.post(
    '/api/sales/:id/room/challenges',
    {
      preHandler: authenticate,
      schema: {
        summary: 'A proof-of-work challenge for the caller (rooms that ask for one), before a ticket',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        response: { 201: ChallengeView, ...errorResponses(400, 401, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      const challenge = await room.challenge(request.params.id, callerOf(request).userId);
      if (!challenge.ok) return refused(reply, challenge);
      return reply
        .code(201)
        .send({ challenge: challenge.challenge, bits: challenge.bits, expiresAt: iso(challenge.expiresAt) });
    },
  );

  app.post(
    '/api/sales/:id/room/tickets',
    {
      preHandler: authenticate,
      preValidation: (request, _reply, done) => {
        request.body ??= {}; // no body: a room without proof of work
        done();
      },
      bodyLimit: 4096,
      schema: {
        summary: 'Join the waiting room: a signed queue ticket with the caller’s place (one per buyer)',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        body: JoinBody,
        response: { 201: StandingView, ...errorResponses(400, 401, 403, 404, 410, 413, 415, 429, 503) },
      },
    },
    async (request, reply) => {
      const { challenge, solution } = request.body;
      if ((challenge === undefined) !== (solution === undefined)) {
        throw new ApiError('bad_request', 'Send both challenge and solution, or neither.');
      }
      const proof = challenge !== undefined && solution !== undefined ? { challenge, solution } : undefined;
      const standing = await room.join(request.params.id, callerOf(request).userId, proof);
      if (!standing.ok) return refused(reply, standing);
      return reply.code(201).send(standingJson(standing));
    },
  );

  app.post(
    '/api/sales/:id/room/check',
    {
      preHandler: authenticate,
      bodyLimit: 4096,
      schema: {
        summary:
          'Where the ticket’s holder stands: waiting (position) or admitted (the admission to buy with)',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        body: CheckBody,
        response: { 200: StandingView, ...errorResponses(400, 401, 403, 404, 410, 413, 415, 429, 503) },
      },
    },
    async (request, reply) => {
      const standing = await room.check(request.params.id, callerOf(request).userId, request.body.ticket);
      if (!standing.ok) return refused(reply, standing);
      return standingJson(standing);
    },
  );

  app.get(
    '/api/sales/:id/room',
    {
      schema: {
        summary: 'The waiting room’s counts: waiting, admitted, rate',
        params: SaleIdParams,
        response: { 200: RoomStatsView, ...errorResponses(400, 404, 429, 503) },
      },
    },
    async (request) => {
      const stats = await room.stats(request.params.id);
      if (!stats) throw new ApiError('no_room', `Sale ${request.params.id} has no waiting room.`);
      return stats;
    },
  );

  // Admissions are Ed25519 JWTs: any service checks them with this key set, without the secret. The
  // set holds the service's one signing key (sale/store/signing-key.ts), raffle receipts' key too.
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        summary:
          "The service's signing keys, admissions' and raffle receipts' (a JSON Web Key Set, EdDSA / Ed25519)",
        response: { 200: JwksView },
      },
    },
    async (_request, reply) => {
      void reply.header('cache-control', 'public, max-age=300');
      return room.admissions.jwks;
    },
  );

  // The operator's switch: a paused room admits nobody (the queue keeps its order, admissions made
  // stay valid); resumed, it admits at its pace again. Kept in the record (room/store.ts).
  for (const [action, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    app.post(
      `/api/sales/:id/room/${action}`,
      {
        preHandler: requireAdmin,
        schema: {
          summary: paused
            ? 'Pause the waiting room (admin): nobody is admitted until it is resumed'
            : 'Resume a paused waiting room (admin): admissions go on at its pace',
          security: [{ bearer: [] }],
          params: SaleIdParams,
          response: { 200: RoomStatsView, ...errorResponses(400, 401, 403, 404, 429, 503) },
        },
      },
      async (request) => {
        const id = request.params.id;
        if (!(await room.rooms.setPaused(id, paused))) {
          throw new ApiError('no_room', `Sale ${id} has no waiting room.`);
        }
        const stats = await room.stats(id);
        if (!stats) throw new ApiError('no_room', `Sale ${id} has no waiting room.`);
        return stats;
      },
    );
  }
};
