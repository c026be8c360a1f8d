/** A sale request that is invalid as such (the HTTP layer maps it to 400 bad_request). */
export class SaleInputError extends TypeError {
  override readonly name = 'SaleInputError';
  readonly code = 'bad_request';
}

/**
 * A buyer over the per-user rate limit (attempts per second on a sale; user-rate-core.lua). Nothing of
 * the sale was read or written. The HTTP layer answers 429 rate_limited.
 */
export class RateLimitedError extends Error {
  override readonly name = 'RateLimitedError';
  readonly code = 'rate_limited';

  constructor(
    /** Milliseconds until the buyer's window ends. */
    readonly retryInMs: number,
  ) {
    super(`too many purchase attempts; retry in ${Math.max(1, Math.ceil(retryInMs / 1000))} s`);
  }
}
