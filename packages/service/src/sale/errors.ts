/** A sale request that is invalid as such (the HTTP layer maps it to 400 bad_request). */
export class SaleInputError extends TypeError {
  override readonly name = 'SaleInputError';
  readonly code = 'bad_request';
}
