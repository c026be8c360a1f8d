import type { FastifyRequest } from 'fastify';

/**
 * Who is looking at a sale, for the dashboard's visitor count: the user of a valid bearer token, else
 * the client address (the socket's; X-Forwarded-For is not trusted). Prefixed so that a user named
 * like an address is not the same visitor.
 */
export function visitorOf(request: FastifyRequest): string {
  if (request.caller) return `u:${request.caller.userId}`;
  if (request.headers.authorization) {
    try {
      return `u:${request.server.tokens.callerOf(request.headers.authorization).userId}`;
    } catch {
      // a bad token on a public route: an anonymous visitor, not an error
    }
  }
  return `ip:${request.ip}`;
}
