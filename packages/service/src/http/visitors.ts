import type { FastifyRequest } from 'fastify';
import { ID_PATTERN } from '../sale/keys.js';

/**
 * Who is looking at a sale, for the dashboard's visitor count: the user of a valid bearer token, else
 * the client address (the socket's; X-Forwarded-For is not trusted). Prefixed so that a user named
 * like an address is not the same visitor.
 */
export async function visitorOf(request: FastifyRequest): Promise<string> {
  if (request.caller) return `u:${request.caller.userId}`;
  if (request.headers.authorization) {
    const user = await request.jwtVerify<{ sub?: unknown }>().then(
      (payload) =>
        typeof payload.sub === 'string' && ID_PATTERN.test(payload.sub) ? payload.sub : undefined,
      () => undefined, // a bad token on a public route: an anonymous visitor, not an error
    );
    if (user) return `u:${user}`;
  }
  return `ip:${request.ip}`;
}
