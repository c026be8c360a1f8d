import type { RoomRefusal, WaitingRoom } from '../room/room.js';

/**
 * What a purchase (or a place in a waitlist) must show for its sale's admission, before its
 * reservation: nothing (first come), a waiting room's admission — whose admitted-at the reservation
 * then spends, on the Redis clock — or a refusal.
 */
export type AdmissionCheck = { readonly ok: true; readonly admittedAt?: number } | RoomRefusal;

/**
 * A sale's admission as the purchase and waitlist routes see it, whatever the sale runs: first come,
 * a raffle (entries drawn, no purchase race), a waiting room (admissions signed for each buyer). The
 * routes ask this, never which one a sale runs (issue 46); each strategy keeps its own folder
 * (room/, raffle/), and this is the one place that knows them all on the purchase side, as
 * admission/restore.ts is on the recovery side.
 */
export interface PurchaseAdmission {
  /**
   * Before the reservation: what the buyer's credential (the `Admission` header) gives. Answered at
   * once (no promise) once this process knows the sale's admission — the hot path of a first-come
   * sale is one Map lookup.
   */
  check(
    saleId: string,
    userId: string,
    credential: string | undefined,
  ): AdmissionCheck | Promise<AdmissionCheck>;
  /**
   * A refusal of the reservation as the sale's admission explains it: a raffle sale answers every
   * purchase "not started" (its not-before key lives until it ends: keys.ts, purchasesNotBefore), and
   * is `raffle_sale` instead. Only that rare refusal reads the sale (and costs a promise): every other
   * refusal — sold out above all, a hot answer — is returned as it is, at once.
   */
  explain<C extends string>(saleId: string, refusal: C): C | Promise<C | 'raffle_sale'>;
}

const NOTHING_TO_SHOW: AdmissionCheck = Object.freeze({ ok: true });
const NO_SALE: AdmissionCheck = Object.freeze({
  ok: false,
  code: 'not_found',
  message: 'There is no such sale.',
});

/** Every admission this service runs, on the purchase side. */
export function purchaseAdmission(
  room: WaitingRoom,
  sales: { isRaffle(saleId: string): Promise<boolean> },
): PurchaseAdmission {
  const byRoom = (
    saleId: string,
    userId: string,
    credential: string | undefined,
    found: Exclude<ReturnType<typeof room.rooms.remembered>, undefined> | 'no_sale',
  ): AdmissionCheck => {
    if (found === 'none') return NOTHING_TO_SHOW;
    if (found === 'no_sale') return NO_SALE;
    return room.checkAdmission(saleId, userId, credential);
  };
  return {
    check(saleId, userId, credential) {
      const known = room.rooms.remembered(saleId);
      if (known !== undefined) return byRoom(saleId, userId, credential, known);
      return room.rooms.roomOf(saleId).then((found) => byRoom(saleId, userId, credential, found));
    },
    explain(saleId, refusal) {
      if (refusal !== 'not_started') return refusal;
      return sales.isRaffle(saleId).then((raffle) => (raffle ? 'raffle_sale' : refusal));
    },
  };
}
