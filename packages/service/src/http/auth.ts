import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createSigner } from 'fast-jwt';
import { ID_PATTERN } from '../sale/keys.js';
import { ApiError } from './errors.js';
import { TokenRefusedError, TokenVerifier, type Caller } from './tokens.js';

export type { Caller } from './tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
  interface FastifyInstance {
    tokens: TokenVerifier;
  }
}

/** Bearer tokens for this app (HS256 with `secret`), verified once and remembered (TokenVerifier). */
export function registerAuth(app: FastifyInstance, secret: string): void {
  app.decorate('tokens', new TokenVerifier(secret));
}

/** The caller of a request's bearer token; an ApiError `unauthorized` if there is none valid. */
function callerOf(request: FastifyRequest): Caller {
  try {
    return request.server.tokens.callerOf(request.headers.authorization);
  } catch (error) {
    if (error instanceof TokenRefusedError) throw new ApiError('unauthorized', error.message);
    throw error;
  }
}

/**
 * preHandler: any valid bearer token. A callback hook, not an async one: it runs on every purchase and
 * has nothing to wait for (verified tokens are remembered), so it costs no promise.
 */
export function authenticate(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
  try {
    request.caller = callerOf(request);
  } catch (error) {
    done(error as Error);
    return;
  }
  done();
}

/** preHandler: a valid token with `role: "admin"`. */
export async function requireAdmin(request: FastifyRequest): Promise<void> {
  request.caller = callerOf(request);
  if (!request.caller.admin) throw new ApiError('forbidden', 'This needs an admin token.');
}

/** Signs a token for trying the API by hand (`lockstock token`). */
export function signToken(
  secret: string,
  userId: string,
  options: { admin?: boolean; ttlSeconds?: number } = {},
) {
  if (!ID_PATTERN.test(userId)) throw new TypeError('user id must match [A-Za-z0-9_-]{1,64}');
  const sign = createSigner({
    key: secret,
    algorithm: 'HS256',
    expiresIn: (options.ttlSeconds ?? 86_400) * 1000,
  });
  return sign({ sub: userId, ...(options.admin ? { role: 'admin' } : {}) });
}
