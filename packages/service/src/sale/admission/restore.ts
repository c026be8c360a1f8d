import { forgetCursor } from '../raffle/waitlist.js';
import type { SaleContext } from '../context/context.js';
import { RoomStore } from '../room/store.js';
import type { Queryable } from '../store/db.js';
import type { Sale } from '../types.js';

/**
 * What a sale's admission keeps in Redis beside its stock, put back by a rebuild before the stock
 * returns (recovery/rebuild.ts takes one from whoever assembles the process: recovery knows stock and
 * parts, not rooms or raffles).
 */
export interface AdmissionRestore {
  /** Puts the sale's admission state back from the record; throws when the record cannot be read. */
  restore(sale: Sale): Promise<void>;
}

/**
 * The restore for every admission this service has: a waiting room's settings (or the sale's
 * "no room" marker) are written again from the record, so a sale Redis lost is never sold without its
 * room, even by a process that starts while PostgreSQL is down; a raffle's cursor is dropped, to be
 * read again from the record (a Redis that came back older may hold an older one).
 */
export function admissionRestore(context: SaleContext, db: Queryable): AdmissionRestore {
  const rooms = new RoomStore(context, db);
  return {
    async restore(sale) {
      if (sale.admission === 'raffle') await forgetCursor(context.redis, sale.id, context.prefix);
      await rooms.restore(sale.id);
    },
  };
}
