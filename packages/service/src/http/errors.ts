import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { RateLimitedError } from '../sale/errors.js';
import { unavailableDependency } from '../sale/unavailable.js';
import type { DependencyLog } from './dependency-log.js';

/** Every error code the API answers with, and its one HTTP status. */
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  // The waiting room (routes/room.ts, sale/room/): what a buyer has not got, or not for this sale.
  admission_required: 403,
  admission_invalid: 403,
  admission_expired: 403,
  admission_not_yet: 403,
  admission_used: 403,
  ticket_invalid: 403,
  pow_required: 403,
  pow_invalid: 403,
  not_found: 404,
  no_room: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  not_started: 409,
  ended: 409,
  sold_out: 409,
  limit_reached: 409,
  // Raffle sales (routes/raffle.ts): an entry outside the entry window; a purchase attempt on a
  // raffle sale (routes/orders.ts: its units are drawn, never bought).
  raffle_sale: 409,
  entries_not_open: 409,
  entries_closed: 409,
  // The waitlist of a first-come sale (routes/waitlist.ts, sale/waitlist/).
  not_sold_out: 409,
  waitlist_unavailable: 409,
  no_offer: 409,
  offer_expired: 409,
  order_pending: 409,
  order_paid: 409,
  order_cancelled: 409,
  order_expired: 409,
  order_rejected: 409,
  ticket_expired: 410,
  pow_expired: 410,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  service_unavailable: 503,
  // A raffle's draw could not have its beacon round (routes/raffle.ts): the relay is unreachable or
  // answered a round its chain did not sign. Nothing was drawn; the runner tries again.
  beacon_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error answered as `{ error: code, message }` with the code's status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }

  get statusCode(): number {
    return ERROR_STATUS[this.code];
  }
}

export function sendError(reply: FastifyReply, code: ErrorCode, message: string): FastifyReply {
  return reply.code(ERROR_STATUS[code]).send({ error: code, message });
}

/** The code for a client-error status raised by a plugin (domain codes such as sold_out excluded). */
const CODE_OF_STATUS: Partial<Record<number, ErrorCode>> = {
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  431: 'headers_too_large',
};

/** Fastify's own errors (validation, parsing, limits) mapped to API codes. */
function fromFastifyError(error: FastifyError): ApiError | undefined {
  if (error.validation) return new ApiError('bad_request', `Invalid request: ${error.message}`);
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'Send the body as application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('bad_request', `The body is not valid JSON: ${error.message}`);
  }
  if (error instanceof SyntaxError || error.statusCode === 400) {
    return new ApiError('bad_request', `The request is malformed: ${error.message}`);
  }
  if (error.statusCode === 429) return new ApiError('rate_limited', 'Too many requests; slow down.');
  // Any other client error a plugin raises keeps its status, under the API's code for it.
  const status = error.statusCode ?? 0;
  if (status >= 400 && status < 500) {
    return new ApiError(CODE_OF_STATUS[status] ?? 'bad_request', `The request was refused: ${error.message}`);
  }
  return undefined;
}

/** Seconds a client should wait before retrying a 503 (the `Retry-After` header). */
export const RETRY_AFTER_SECONDS = 1;

const UNAVAILABLE_MESSAGE = 'The service is temporarily unavailable; try again shortly.';

/** A 503 `service_unavailable` with `Retry-After`: a dependency is down, or the server is closing. */
export function sendUnavailable(reply: FastifyReply, message = UNAVAILABLE_MESSAGE): FastifyReply {
  return sendError(reply.header('retry-after', String(RETRY_AFTER_SECONDS)), 'service_unavailable', message);
}

/** The counter of 503s answered because a dependency was unavailable (one per registry). */
export function unavailableCounter(registry: Registry): Counter<'dependency'> {
  const name = 'lockstock_http_unavailable_total';
  return (
    (registry.getSingleMetric(name) as Counter<'dependency'> | undefined) ??
    new Counter({
      name,
      help: 'Requests answered 503 because a dependency was unavailable, by dependency (redis, database, other)',
      labelNames: ['dependency'] as const,
      registers: [registry],
    })
  );
}

/**
 * The API's error handler: known errors keep their code and message; a dependency that is down is a
 * 503 with Retry-After (counted by dependency); anything else is a 500. Details of 5xx go to the log
 * only, never to the client.
 */
export function createErrorHandler(registry: Registry, dependencies: DependencyLog) {
  const unavailable = unavailableCounter(registry);
  return function errorHandler(
    error: FastifyError | ApiError,
    request: FastifyRequest,
    reply: FastifyReply,
  ): FastifyReply | Promise<FastifyReply> {
    const known =
      error instanceof ApiError
        ? error
        : error instanceof RateLimitedError
          ? rateLimited(reply, error)
          : fromFastifyError(error);
    if (known?.code === 'payload_too_large' && !request.raw.complete) {
      return answerAfterBody(request, reply, known);
    }
    if (known) return sendError(reply, known.code, known.message);
    const dependency = unavailableDependency(error);
    if (dependency) {
      unavailable.inc({ dependency });
      // One line per outage, not one per refused request (dependency-log.ts).
      dependencies.down(dependency, error, true, Date.now() - reply.elapsedTime);
      return sendUnavailable(reply);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, 'internal_error', 'Something went wrong on our side.');
  };
}

/** A buyer over the per-user rate limit: 429 with Retry-After, as the per-address limit answers. */
function rateLimited(reply: FastifyReply, error: RateLimitedError): ApiError {
  const seconds = Math.max(1, Math.ceil(error.retryInMs / 1000));
  void reply.header('retry-after', String(seconds));
  return new ApiError('rate_limited', `Too many purchase attempts; retry in ${seconds} s.`);
}

/** A body past the limit is still read (and dropped) up to this size, so its sender gets the 413. */
const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * Answers a 413 once the client has sent its body. Answering while it still sends and then closing
 * (as `Connection: close` does) resets the connection under a client that writes its whole body
 * before it reads (most do, without `Expect: 100-continue`): it sees ECONNRESET or EPIPE instead of
 * the 413. The rest of the body is read and dropped — at most DRAIN_LIMIT_BYTES, within the server's
 * request timeout — then the 413 goes out and the connection closes. A body beyond that gets the 413
 * at once and the socket is destroyed.
 */
function answerAfterBody(
  request: FastifyRequest,
  reply: FastifyReply,
  error: ApiError,
): Promise<FastifyReply> {
  const raw = request.raw;
  return new Promise((resolve) => {
    let dropped = 0;
    const done = (drained: boolean) => {
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onEnd);
      reply.header('connection', 'close');
      resolve(sendError(reply, error.code, error.message));
      if (!drained) reply.raw.once('finish', () => raw.socket?.destroy());
    };
    const onData = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > DRAIN_LIMIT_BYTES) done(false);
    };
    const onEnd = () => done(true);
    raw.on('data', onData);
    raw.once('end', onEnd);
    raw.once('error', onEnd);
    raw.resume();
  });
}

/**
 * Fastify's `frameworkErrors`: a URL that does not decode (400) or a path parameter over
 * `maxParamLength` (414), answered in the API's shape instead of Fastify's.
 */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  // Sends and returns nothing: Fastify expects no value here (a reply is thenable).
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void sendError(reply, 'uri_too_long', 'A path segment of the URL is too long.');
  } else if (error.code === 'FST_ERR_BAD_URL') {
    void sendError(reply, 'bad_request', 'The URL is not valid (a percent-escape does not decode).');
  } else {
    void sendError(reply, 'internal_error', 'Something went wrong on our side.');
  }
}

/**
 * Node's `clientError` (through Fastify's `clientErrorHandler`): requests Node refuses before any
 * route sees them — headers or request line over `maxHeaderSize` (431), a request that did not
 * arrive within `requestTimeout` (408), chunk extensions over their limit (413), and malformed HTTP
 * (400) — answered in the API's shape on the raw socket, which is then closed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return; // nobody left to answer
  const [code, message]: [ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['headers_too_large', 'The request line and headers are too large.']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', 'The request did not arrive in time.']
        : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
          ? ['payload_too_large', 'The chunk extensions of the body are too large.']
          : ['bad_request', 'The request is not valid HTTP.'];
  const status = ERROR_STATUS[code];
  const body = JSON.stringify({ error: code, message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
