import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BeaconError } from '../../sale/raffle/draw.js';
import type { EntryRefusal } from '../../sale/raffle/entries.js';
import type { RaffleService, RaffleView as RaffleViewType } from '../../sale/raffle/raffles.js';
import { SaleRecoveringError } from '../../sale/recovering.js';
import { authenticate, requireAdmin } from '../auth.js';
import { ApiError, RETRY_AFTER_SECONDS } from '../errors.js';
import {
  DrawAwaiting,
  DrawResult,
  EntryAccepted,
  EntryView,
  PublishedRaffle,
  RaffleView,
  SigningKey,
} from '../raffle-schemas.js';
import { errorResponses, SaleIdParams } from '../schemas.js';

const REFUSALS: Record<Exclude<EntryRefusal, 'recovering'>, [ApiError['code'], string]> = {
  not_found: ['not_found', 'There is no raffle sale with this id.'],
  entries_not_open: ['entries_not_open', 'Entries to this raffle have not opened yet.'],
  entries_closed: ['entries_closed', 'Entries to this raffle are closed.'],
};

const raffleJson = ({ drawAt, drawnAt, ...raffle }: RaffleViewType) => ({
  ...raffle,
  drawAt: drawAt.toISOString(),
  ...(drawnAt ? { drawnAt: drawnAt.toISOString() } : {}),
});

export interface RaffleRouteOptions {
  raffles: RaffleService;
}

/** Raffle sales (sale/raffle/): enter, look at the raffle and one's entry, the published draw. */
export const raffleRoutes: FastifyPluginAsyncTypebox<RaffleRouteOptions> = async (app, { raffles }) => {
  const notRaffle = (id: string) => new ApiError('not_found', `There is no raffle sale ${id}.`);

  app.post(
    '/api/sales/:id/raffle/entries',
    {
      preHandler: authenticate,
      bodyLimit: 1024,
      schema: {
        summary: 'Enter a raffle sale (the caller, from the token; one entry per buyer, idempotent)',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        response: { 202: EntryAccepted, ...errorResponses(400, 401, 404, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const caller = request.caller as NonNullable<FastifyRequest['caller']>;
      const result = await raffles.enter(request.params.id, caller.userId);
      if (!result.ok) {
        if (result.code === 'recovering') throw new SaleRecoveringError(request.params.id);
        const [code, message] = REFUSALS[result.code];
        throw new ApiError(code, message);
      }
      const receipt = await raffles.receipt(request.params.id, result.entryHash);
      if (!receipt) throw notRaffle(request.params.id);
      return reply.code(202).send({
        entryHash: result.entryHash,
        status: 'entered' as const,
        duplicate: result.duplicate,
        receipt,
      });
    },
  );

  app.get(
    '/api/sales/:id/raffle',
    {
      schema: {
        summary: "A raffle sale's phase, seed commitment (the seed once drawn), entries, winners, waitlist",
        params: SaleIdParams,
        response: { 200: RaffleView, ...errorResponses(400, 404, 429, 503) },
      },
    },
    async (request) => {
      const raffle = await raffles.view(request.params.id);
      if (!raffle) throw notRaffle(request.params.id);
      return raffleJson(raffle);
    },
  );

  app.get(
    '/api/sales/:id/raffle/entries',
    {
      schema: {
        summary: 'The published entry list (hashed ids, places, winners) and seed: `lockstock raffle verify`',
        params: SaleIdParams,
        response: { 200: PublishedRaffle, ...errorResponses(400, 404, 429, 503) },
      },
    },
    async (request) => {
      const published = await raffles.published(request.params.id);
      if (!published) throw notRaffle(request.params.id);
      return { ...published, entries: [...published.entries] };
    },
  );

  app.get(
    '/api/sales/:id/raffle/entry',
    {
      preHandler: authenticate,
      schema: {
        summary: "The caller's entry: entered, won (with its order), waitlisted or not drawn",
        security: [{ bearer: [] }],
        params: SaleIdParams,
        response: { 200: EntryView, ...errorResponses(400, 401, 404, 429, 503) },
      },
    },
    async (request) => {
      const caller = request.caller as NonNullable<FastifyRequest['caller']>;
      const entry = await raffles.entryOf(request.params.id, caller.userId);
      if (!entry) throw new ApiError('not_found', 'You have no entry in this raffle.');
      const receipt = await raffles.receipt(request.params.id, entry.entryHash);
      return { ...entry, ...(receipt ? { receipt } : {}) };
    },
  );

  app.get(
    '/.well-known/lockstock/raffle-key',
    {
      schema: {
        summary:
          "The service's Ed25519 signing key (receipts, close statements, admissions; also in /.well-known/jwks.json)",
        response: { 200: SigningKey, ...errorResponses(429, 503) },
      },
    },
    async () => raffles.signer.publicKey(),
  );

  app.post(
    '/api/sales/:id/raffle/draw',
    {
      preHandler: requireAdmin,
      bodyLimit: 1024,
      schema: {
        summary:
          'Close the entries now and draw (admin; once: a drawn raffle answers already; 202 while the draw waits for its beacon round; 503 beacon_unavailable when the relay fails or lies)',
        security: [{ bearer: [] }],
        params: SaleIdParams,
        response: { 200: DrawResult, 202: DrawAwaiting, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      const outcome = await raffles.drawNow(request.params.id).catch((error: unknown) => {
        throw error instanceof BeaconError ? beaconUnavailable(error, request, reply) : error;
      });
      if (outcome.result === 'not_found') throw notRaffle(request.params.id);
      if (outcome.result === 'not_due') throw new Error('a raffle closed now was not due'); // cannot happen
      if (outcome.result === 'awaiting_beacon') {
        const { round, roundAt, reason, message } = outcome;
        if (round === undefined || !roundAt || !reason || !message) throw new Error('a wait unexplained'); // draw.ts sets all four
        // Accepted: the entries are closed now; the draw completes without the caller once the round
        // is out (the raffle runner draws it). Retry-After: when the round is due.
        if (reason === 'round_not_out') reply.header('retry-after', String(secondsUntil(roundAt)));
        return reply
          .code(202)
          .send({ result: 'awaiting_beacon', round, roundAt: roundAt.toISOString(), reason, message });
      }
      return {
        result: outcome.result,
        ...(outcome.entries === undefined ? {} : { entries: outcome.entries }),
        ...(outcome.round === undefined ? {} : { round: outcome.round }),
      };
    },
  );
};

/** Whole seconds from now until `at`, at least 1 (a Retry-After). */
const secondsUntil = (at: Date) => Math.max(1, Math.ceil((at.getTime() - Date.now()) / 1000));

/**
 * A draw whose beacon round could not be had: 503, nothing drawn, the raffle still closed (the runner
 * tries again). What the relay said goes to the log, not to the client (its address is the operator's).
 */
function beaconUnavailable(error: BeaconError, request: FastifyRequest, reply: FastifyReply): ApiError {
  request.log.error({ err: error }, 'raffle not drawn: its beacon round');
  void reply.header('retry-after', String(RETRY_AFTER_SECONDS));
  return new ApiError(
    'beacon_unavailable',
    error.kind === 'forged'
      ? `The randomness beacon's relay answered round ${error.round} with a signature its chain did not make: nothing was drawn with it. The draw waits for a true round.`
      : `The randomness beacon's relay did not answer for round ${error.round}: nothing was drawn. The draw waits for the round; try again shortly.`,
  );
}
