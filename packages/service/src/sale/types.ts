/** The flash-sale domain, as the service and the HTTP API see it. */

import type { RoomSettings } from './room/settings.js';

export type SaleStatus = 'scheduled' | 'active' | 'sold_out' | 'ended';

export interface Sale {
  readonly id: string;
  readonly name: string;
  readonly stock: number;
  readonly perUserLimit: number;
  readonly startsAt: Date;
  readonly endsAt: Date;
  /** How long a buyer has to pay a reservation before it expires and its units return; none: no limit. */
  readonly payWithinSeconds?: number;
  /**
   * The hash tags of a split sale's parts (shards/layout.ts), chosen at creation; absent for a sale of
   * one part.
   */
  readonly partTags?: readonly string[];
  /** 'raffle': buyers enter, a draw gives the units (raffle/); absent: first come, first served. */
  readonly admission?: 'raffle';
}

export interface SaleView extends Sale {
  /** Units still available for reservation (Redis). */
  readonly remaining: number;
  /** Units held by orders (stock - remaining): reserved, confirmed or paid. */
  readonly sold: number;
  readonly status: SaleStatus;
  /** Parts the stock is split into (1: not split). */
  readonly shards: number;
  /** The sale's waiting room (where the caller looked it up; see room/store.ts). */
  readonly room?: RoomSettings;
}

export interface NewSale {
  name: string;
  stock: number;
  startsAt?: Date;
  endsAt?: Date;
  perUserLimit?: number;
  /** 'raffle': entries until `drawAt`, then a draw (raffle/). @default 'first_come' */
  admission?: 'first_come' | 'raffle';
  /** A raffle's end of entries and draw; between startsAt and endsAt. @default midway between them */
  drawAt?: Date;
  payWithinSeconds?: number;
  /** Split the stock into this many parts, each on its own Redis Cluster master (1: one part). @default 1 */
  shards?: number;
  /** A waiting room before the purchase (room/): buyers are admitted at a paced rate. None: no room. */
  room?: Partial<RoomSettings> & { ratePerSec: number };
}

/** Why a reservation was refused (each maps to one HTTP status in http/errors.ts). */
export type RefusalCode =
  | 'not_found'
  | 'not_started'
  | 'ended'
  | 'sold_out'
  | 'limit_reached'
  | 'idempotency_key_reused'
  // A sale with a waiting room: the admission, checked and spent on the Redis clock (room/lua/admission.lua).
  | 'admission_used'
  | 'admission_not_yet'
  | 'admission_expired';

export type Reservation =
  | { readonly ok: true; readonly orderId: string; readonly duplicate: boolean }
  | { readonly ok: false; readonly code: RefusalCode };

/**
 * An order's state: `reserved` (in Redis, not recorded yet) → `confirmed` (recorded) → `paid`,
 * `cancelled` (by its buyer) or `expired` (not paid within the sale's window); `rejected` when the
 * record refused a reservation Redis admitted.
 */
export type OrderStatus = 'reserved' | 'confirmed' | 'paid' | 'cancelled' | 'expired' | 'rejected';

/** The final states an order reaches from `confirmed`, exactly once. */
export type SettledStatus = 'paid' | 'cancelled' | 'expired';

export interface Order {
  readonly orderId: string;
  readonly saleId: string;
  readonly userId: string;
  readonly quantity: number;
  readonly status: OrderStatus;
  /** Why PostgreSQL refused a reservation (only for `rejected`). */
  readonly reason?: string;
  /** When an unpaid order expires (only for orders of a sale with a payment window, once recorded). */
  readonly payBy?: Date;
}

/** What a buyer can do to an order. */
export type OrderAction = 'pay' | 'cancel';

/** Why paying or cancelling an order was refused (each maps to one HTTP status in http/errors.ts). */
export type OrderRefusalCode =
  'not_found' | 'order_pending' | 'order_paid' | 'order_cancelled' | 'order_expired' | 'order_rejected';

export type OrderActionResult =
  | { readonly ok: true; readonly order: Order }
  | { readonly ok: false; readonly code: OrderRefusalCode; readonly order?: Order };
