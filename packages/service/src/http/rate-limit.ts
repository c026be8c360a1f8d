import type { SaleRedis } from '../sale/redis.js';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

/**
 * Rate limits shared by every instance through Redis: per client address on every route, per user
 * on the order route (after authentication, keyed by the token's subject). Redis errors fail closed
 * (skipOnError false): an unlimited flash sale is worse than a refused request. The client address is
 * the socket's (trustProxy off), so X-Forwarded-For cannot be used to dodge the limit.
 * Returns the per-user check, or undefined when that limit is off.
 */
export async function registerRateLimits(
  app: FastifyInstance,
  redis: SaleRedis,
  limits: { perIp: number; perUser: number; keyPrefix: string },
): Promise<((request: FastifyRequest) => Promise<void>) | undefined> {
  await app.register(rateLimit, {
    global: limits.perIp > 0,
    max: Math.max(limits.perIp, 1),
    timeWindow: 1000,
    redis,
    nameSpace: `${limits.keyPrefix}:rl:`,
    skipOnError: false,
    keyGenerator: (request) => `ip:${request.ip}`,
    errorResponseBuilder: (_request, context) => ({
      statusCode: 429,
      error: 'rate_limited',
      message: `Too many requests from this address; retry in ${Math.ceil(context.ttl / 1000)} s.`,
    }),
  });
  if (limits.perUser <= 0) return undefined;
  const check = app.createRateLimit({
    max: limits.perUser,
    timeWindow: 1000,
    keyGenerator: (request) => `user:${request.caller?.userId ?? ''}`,
  });
  return async (request) => {
    const limit = await check(request);
    if (!limit.isAllowed && limit.isExceeded) {
      throw new ApiError(
        'rate_limited',
        `Too many purchase attempts; retry in ${Math.ceil(limit.ttlInSeconds)} s.`,
      );
    }
  };
}
