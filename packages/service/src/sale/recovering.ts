import { DependencyUnavailableError } from './unavailable.js';

/**
 * A sale cannot be sold or settled right now: its Redis state is being rebuilt from the record (or
 * is about to be: this process has not checked it against the record since its Redis connection came
 * back). A 503 with Retry-After, like any Redis outage: the client retries with its Idempotency-Key.
 */
export class SaleRecoveringError extends DependencyUnavailableError {
  override readonly name: string = 'SaleRecoveringError';

  constructor(
    readonly saleId: string,
    why = `sale ${saleId} is being restored from the record`,
  ) {
    super('redis', new Error(why));
  }
}
