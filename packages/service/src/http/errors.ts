import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

/** Every error code the API answers with, and its one HTTP status. */
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_started: 409,
  ended: 409,
  sold_out: 409,
  limit_reached: 409,
  order_pending: 409,
  order_paid: 409,
  order_cancelled: 409,
  order_expired: 409,
  order_rejected: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
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
  return undefined;
}

/**
 * The API's error handler: known errors keep their code and message; anything else is a 500 (or a
 * 503 when a dependency is down) whose details go to the log only, never to the client.
 */
export function errorHandler(error: FastifyError | ApiError, request: FastifyRequest, reply: FastifyReply) {
  const known = error instanceof ApiError ? error : fromFastifyError(error);
  if (known) return sendError(reply, known.code, known.message);
  const unavailable = isDependencyDown(error);
  request.log.error({ err: error }, unavailable ? 'dependency unavailable' : 'unhandled error');
  return unavailable
    ? sendError(reply, 'service_unavailable', 'The service is temporarily unavailable; try again shortly.')
    : sendError(reply, 'internal_error', 'Something went wrong on our side.');
}

function isDependencyDown(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    (error as Error).name === 'IdGeneratorUnavailableError' ||
    (typeof code === 'string' && /^(ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|08|57P)/.test(code)) ||
    /Connection is closed|MaxRetriesPerRequest|connect ECONN/.test((error as Error).message ?? '')
  );
}
