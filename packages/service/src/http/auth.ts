import jwt from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createSigner } from 'fast-jwt';
import { ID_PATTERN } from '../sale/keys.js';
import { ApiError } from './errors.js';

/** The authenticated caller: the user id comes only from the verified token. */
export interface Caller {
  userId: string;
  admin: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: { sub: string; role?: string };
  }
}

export async function registerAuth(app: FastifyInstance, secret: string): Promise<void> {
  await app.register(jwt, {
    secret,
    sign: { algorithm: 'HS256' },
    verify: { algorithms: ['HS256'] }, // never `none`, never another algorithm
  });
}

/** preHandler: any valid bearer token. */
export async function authenticate(request: FastifyRequest): Promise<void> {
  let payload: { sub?: unknown; role?: unknown };
  try {
    payload = await request.jwtVerify();
  } catch (error) {
    const code = (error as { code?: string }).code;
    const message =
      code === 'FST_JWT_NO_AUTHORIZATION_IN_HEADER'
        ? 'Send a bearer token: Authorization: Bearer <token>.'
        : code === 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED'
          ? 'The token has expired.'
          : 'The token is not valid.';
    throw new ApiError('unauthorized', message);
  }
  if (typeof payload.sub !== 'string' || !ID_PATTERN.test(payload.sub)) {
    throw new ApiError('unauthorized', 'The token has no valid subject (sub).');
  }
  request.caller = { userId: payload.sub, admin: payload.role === 'admin' };
}

/** preHandler: a valid token with `role: "admin"`. */
export async function requireAdmin(request: FastifyRequest): Promise<void> {
  await authenticate(request);
  if (!request.caller?.admin) throw new ApiError('forbidden', 'This needs an admin token.');
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
