import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SaleContext } from '../sale/context/context.js';
import { countUserAttempt } from '../sale/user-rate.js';
import { AddressLimiter } from './address-limit.js';
import { sendError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the per-address rate limit leaves this route alone (probes, scrapes). */
    rateLimit?: false;
  }
}

/** The limits as the routes take them (registerRateLimits). */
export interface RateLimits {
  /** Purchase attempts per second per user and sale; undefined: off. Counted by the reservation. */
  perUser?: number;
  /** The per-user check for routes whose work is no reservation (the waitlist); undefined: off. */
  limitUser?: (request: FastifyRequest) => Promise<void>;
}

/**
 * The rate limits, both cheap enough to leave on (issue 49: as a Redis round trip each, they halved
 * the purchases a process answers):
 * - per client address on every route: counted in this process's memory and reconciled through Redis
 *   every 100 ms (AddressLimiter says what that bounds across processes). The address is the socket's
 *   (trustProxy off), so X-Forwarded-For cannot be used to dodge it.
 * - per user and sale, purchase attempts per second: counted in Redis by the reservation script itself
 *   (reserve-limited.lua, one round trip for both), so shared exactly by every process; the waitlist
 *   counts it in a script of its own (user-rate.lua) on the same counter.
 * Over either, the answer is 429 rate_limited and nothing changes.
 */
export function registerRateLimits(
  app: FastifyInstance,
  context: SaleContext,
  limits: { perIp: number; perUser: number },
): RateLimits {
  if (limits.perIp > 0) {
    const limiter = new AddressLimiter(context.scripts, { max: limits.perIp, keyPrefix: context.prefix });
    limiter.start();
    app.addHook('onClose', () => limiter.stop());
    // A callback hook: it has nothing to wait for, so it costs no promise.
    app.addHook('onRequest', (request, reply, done) => {
      if (request.routeOptions.config.rateLimit === false || limiter.admit(request.ip)) {
        done();
        return;
      }
      const seconds = Math.max(1, Math.ceil(limiter.msLeft() / 1000));
      void reply.header('retry-after', String(seconds));
      sendError(reply, 'rate_limited', `Too many requests from this address; retry in ${seconds} s.`);
    });
  }
  if (limits.perUser <= 0) return {};
  const perUser = limits.perUser;
  return {
    perUser,
    limitUser: (request) =>
      countUserAttempt(
        context.scripts,
        context.keys.sale((request.params as { id: string }).id).userRate(request.caller?.userId ?? ''),
        perUser,
      ),
  };
}
