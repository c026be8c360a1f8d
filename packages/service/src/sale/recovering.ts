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

/**
 * A sale with a waiting room whose room is not in Redis (its settings' key was lost, with the slot's
 * data or alone): a 503, never a sale without its room. The process that meets it puts the room back
 * from the record (RoomStore.lost), so the next purchase finds it.
 */
export class RoomMissingError extends SaleRecoveringError {
  override readonly name: string = 'RoomMissingError';

  constructor(saleId: string) {
    super(saleId, `sale ${saleId}'s waiting room is not in Redis; it is put back from the record`);
  }
}
