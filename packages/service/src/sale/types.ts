/** A sale's waiting room, as the operator sets it when creating the sale. */
export interface RoomSettings {
  /** Buyers admitted per second, in total over every serve process (fractions allowed: 0.5). */
  readonly ratePerSec: number;
  /**
   * Proof of work before a ticket: leading zero bits of SHA-256 the buyer must find (0: none). Each
   * bit doubles the expected work; README "Waiting room" has what a browser pays per difficulty.
   */
  readonly powBits: number;
  /** How long a queue ticket is valid, s. */
  readonly ticketSeconds: number;
  /** How long an admission lets its buyer buy, s (then they join again, at the back). */
  readonly admissionSeconds: number;
  /**
   * An admission is valid from this many seconds after it is made (and for `admissionSeconds` then).
   * Buyers are told to ask at least this often, so everyone admitted learns of it before it may be
   * used: a bot asking ten times as often gains nothing, and purchases follow admission order.
   */
  readonly noticeSeconds: number;
  /**
   * Arrivals within one window of this many seconds (and everyone before the sale starts) are
   * ordered at random, so a fast connection or a bot's head start gains nothing inside a window. The
   * first admission comes when the first window ends (this long after the sale starts).
   */
  readonly shuffleSeconds: number;
  /**
   * At most this many buyers admitted and not yet done (neither bought nor lapsed) at once, over every
   * serve process: the room's capacity, beside its pace (0: the pace alone). A purchase or a lapsed
   * admission frees its slot.
   */
  readonly maxActive: number;
  /**
   * Admissions pause while the order pipeline has more than this many of the sale's reservations not
   * yet recorded (its consumer group's lag plus pending), and go on when it catches up: the pace fed by
   * what the pipeline can take (0: off). A split sale's streams are on its parts: not paced so.
   */
  readonly maxBacklog: number;
}

/** The flash-sale domain, as the service and the HTTP API see it. */

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
