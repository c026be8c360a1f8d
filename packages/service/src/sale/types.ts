/** The flash-sale domain, as the service and the HTTP API see it. */

export type SaleStatus = 'scheduled' | 'active' | 'sold_out' | 'ended';

export interface Sale {
  readonly id: string;
  readonly name: string;
  readonly stock: number;
  readonly perUserLimit: number;
  readonly startsAt: Date;
  readonly endsAt: Date;
}

export interface SaleView extends Sale {
  /** Units still available for reservation (Redis). */
  readonly remaining: number;
  /** Units reserved so far (stock - remaining). */
  readonly sold: number;
  readonly status: SaleStatus;
}

export interface NewSale {
  name: string;
  stock: number;
  startsAt?: Date;
  endsAt?: Date;
  perUserLimit?: number;
}

/** Why a reservation was refused (each maps to one HTTP status in http/errors.ts). */
export type RefusalCode =
  'not_found' | 'not_started' | 'ended' | 'sold_out' | 'limit_reached' | 'idempotency_key_reused';

export type Reservation =
  | { readonly ok: true; readonly orderId: string; readonly duplicate: boolean }
  | { readonly ok: false; readonly code: RefusalCode };

export type OrderStatus = 'reserved' | 'confirmed' | 'rejected';

export interface Order {
  readonly orderId: string;
  readonly saleId: string;
  readonly userId: string;
  readonly quantity: number;
  readonly status: OrderStatus;
  /** Why PostgreSQL refused a reservation (only for `rejected`). */
  readonly reason?: string;
}
