import { DEFAULT_KEY_PREFIX } from 'lockstock/redis';

/**
 * Redis keys of one sale. All share the hash tag `{sale:<id>}`, so the reservation script touches one
 * Redis Cluster slot. User ids and idempotency keys are validated (ID_PATTERN) before they get here.
 */
export interface SaleKeys {
  /** hash: total (stock), limit (per user), remaining (units left to reserve) */
  readonly meta: string;
  /** exists until the sale starts (expires at startsAt, on the Redis clock) */
  readonly notBefore: string;
  /** exists until the sale ends (expires at endsAt, on the Redis clock) */
  readonly open: string;
  /** hash: user id → units reserved */
  readonly buyers: string;
  /** stream: one entry per reservation, consumed by the order pipeline */
  readonly stream: string;
  /** stream: entries the pipeline gave up on (poison messages) */
  readonly dead: string;
  /** hash: purchase outcome → attempts, for the dashboard (written by SaleActivity) */
  readonly outcomes: string;
  /** HyperLogLog of the visitors (user ids, client addresses) who looked at or tried to buy the sale */
  readonly visitors: string;
  /** string per (user, Idempotency-Key): "<orderId>:<quantity>" */
  idempotency(userId: string, key: string): string;
}

/** Ids of users, sales and idempotency keys: short, and nothing that could change a key's meaning. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The set of sale ids the order pipeline reads (one key, no hash tag). */
export const activeSalesKey = (prefix = DEFAULT_KEY_PREFIX) => `${prefix}:sales:active`;

export function saleKeys(saleId: string, prefix = DEFAULT_KEY_PREFIX): SaleKeys {
  const base = `${prefix}:{sale:${saleId}}`;
  return {
    meta: `${base}:meta`,
    notBefore: `${base}:not-before`,
    open: `${base}:open`,
    buyers: `${base}:buyers`,
    stream: `${base}:orders`,
    dead: `${base}:dead`,
    outcomes: `${base}:outcomes`,
    visitors: `${base}:visitors`,
    idempotency: (userId, key) => `${base}:idem:${userId}:${key}`,
  };
}

/** The consumer group of the order pipeline on every sale stream. */
export const ORDER_GROUP = 'order-writers';
