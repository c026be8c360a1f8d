import { DEFAULT_KEY_PREFIX } from 'lockstock/redis';
import type { Sale } from './types.js';

/**
 * Redis keys of one sale. All share the hash tag `{sale:<id>}`, so every script of a sale touches one
 * Redis Cluster slot. User ids and idempotency keys are validated (ID_PATTERN) before they get here.
 */
export interface SaleKeys {
  /** string: units left to reserve. Never expires (an ended sale keeps its count for the record). */
  readonly stock: string;
  /** exists until purchases open (expires then, on the Redis clock: purchasesNotBefore) */
  readonly notBefore: string;
  /** string: the per-user limit; exists until the sale ends (expires at endsAt, on the Redis clock) */
  readonly open: string;
  /** hash: user id → units held (reserved, confirmed or paid); a user holding nothing has no field */
  readonly buyers: string;
  /** stream: reservations and order lifecycle events, consumed by the order pipeline */
  readonly stream: string;
  /** stream: entries the pipeline gave up on (poison messages) */
  readonly dead: string;
  /** hash: purchase outcome → attempts, for the dashboard (written by SaleActivity) */
  readonly outcomes: string;
  /** HyperLogLog of the visitors (user ids, client addresses) who looked at or tried to buy the sale */
  readonly visitors: string;
  /** hash: order id → final state (paid, cancelled, expired); the arbiter of each order's one transition */
  readonly settled: string;
  /** sorted set: unpaid orders of a sale with a payment window, scored by their deadline (ms, Redis clock) */
  readonly deadlines: string;
  /** shard channel: a message whenever units come back (cancel, expiry, repair), for sold-out caches */
  readonly restock: string;
  /**
   * string: exists while the sale is being rebuilt from the record (recovery/), holding the token of
   * the process doing it. Every script that sells or settles reads it first and refuses while it exists.
   */
  readonly recovering: string;
  /**
   * sorted set: buyers waiting for a unit of a sold-out first-come sale (waitlist/), scored by their
   * recorded place (sale_waitlist.seq): lowest first. A buyer leaves it when offered a unit.
   */
  readonly waitlist: string;
  /**
   * sorted set: units held apart from the stock as offers to waitlisted buyers, one unit per buyer,
   * scored by the offer's end (ms, Redis clock). stock + ZCARD(offers) + units held by orders = the
   * sale's stock.
   */
  readonly offers: string;
  /** hash of the layout before 0.3 ({total, limit, remaining}); read once by warm-sale.lua to upgrade */
  readonly legacyMeta: string;
  /** string per (user, Idempotency-Key): "<orderId>:<quantity>" */
  idempotency(userId: string, key: string): string;
  /**
   * string per user: the user's purchase attempts in the current second (the per-user rate limit,
   * user-rate.lua); expires with its window.
   */
  userRate(userId: string): string;
}

/** Ids of users, sales and idempotency keys: short, and nothing that could change a key's meaning. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The set of sale ids the order pipeline and the expiry sweeper read (one key, no hash tag). */
export const activeSalesKey = (prefix = DEFAULT_KEY_PREFIX) => `${prefix}:sales:active`;

/** The lease of the serve process that exposes the per-sale gauges (gauges-reader.lua; one key). */
export const gaugesReaderKey = (prefix = DEFAULT_KEY_PREFIX) => `${prefix}:gauges:reader`;

export function saleKeys(saleId: string, prefix = DEFAULT_KEY_PREFIX): SaleKeys {
  return keysOfTag(`sale:${saleId}`, prefix);
}

/**
 * A sale's key set on the hash tag `tag`: `sale:<id>` for a sale of one part, a part's own tag for
 * each part of a split sale (shards/layout.ts).
 */
export function keysOfTag(tag: string, prefix = DEFAULT_KEY_PREFIX): SaleKeys {
  const base = `${prefix}:{${tag}}`;
  return {
    stock: `${base}:stock`,
    notBefore: `${base}:not-before`,
    open: `${base}:open`,
    buyers: `${base}:buyers`,
    stream: `${base}:orders`,
    dead: `${base}:dead`,
    outcomes: `${base}:outcomes`,
    visitors: `${base}:visitors`,
    settled: `${base}:settled`,
    deadlines: `${base}:deadlines`,
    restock: `${base}:restock`,
    recovering: `${base}:recovering`,
    waitlist: `${base}:waitlist`,
    offers: `${base}:offers`,
    legacyMeta: `${base}:meta`,
    idempotency: (userId, key) => `${base}:idem:${userId}:${key}`,
    userRate: (userId) => `${base}:rl:user:${userId}`,
  };
}

/**
 * A sale's keys with one prefix bound: a module asks `keys.sale(id)` and never chooses (or recovers,
 * by slicing a key apart) the prefix itself. A process holds one, in its sale context
 * (context/context.ts); the builders of room/, raffle/ and shards/ take `prefix` from there.
 */
export interface SaleKeyspace {
  readonly prefix: string;
  /** A sale's keys (hash tag `{sale:<id>}`). */
  sale(saleId: string): SaleKeys;
  /** A key set on any tag: a sale's own, or one part's of a split sale. */
  ofTag(tag: string): SaleKeys;
  /** The set of sale ids the order pipeline and the expiry sweeper read. */
  readonly activeSales: string;
}

export function saleKeyspace(prefix: string): SaleKeyspace {
  return Object.freeze({
    prefix,
    sale: (saleId: string) => saleKeys(saleId, prefix),
    ofTag: (tag: string) => keysOfTag(tag, prefix),
    activeSales: activeSalesKey(prefix),
  });
}

/** The sale id in a key or channel of `saleKeys` or of a part's keys (undefined if it is not one). */
export function saleIdOfKey(key: string): string | undefined {
  return /\{sale:([^}:]+)(?::p\d+\.\d+)?\}/.exec(key)?.[1];
}

/**
 * When a sale's purchase route opens, for its not-before key (ms; 0: open already): never, for a
 * raffle sale — its not-before key lives until the sale ends, so reserve.lua answers every purchase
 * attempt "not started" and only the draw order gets units (raffle/lua/promote.lua). Here, below
 * raffle/, because a sale's warm and recovery's rebuild both set the key and recovery knows no raffle.
 */
export function purchasesNotBefore(
  sale: Pick<Sale, 'startsAt' | 'endsAt' | 'admission'>,
  now = Date.now(),
): number {
  if (sale.admission === 'raffle') return sale.endsAt.getTime();
  return sale.startsAt.getTime() <= now ? 0 : sale.startsAt.getTime();
}

/** The consumer group of the order pipeline on every sale stream. */
export const ORDER_GROUP = 'order-writers';

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
