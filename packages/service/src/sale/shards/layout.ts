import { DEFAULT_KEY_PREFIX } from 'lockstock/redis';
import { keysOfTag, type SaleKeys } from '../keys.js';
import type { SaleContext } from '../context/context.js';

/** Parts a sale may be split into. */
export const MAX_SHARDS = 16;

/**
 * Where a sale's parts live: one hash tag per part. A sale of one part has the tag `sale:<id>` (its
 * keys are `saleKeys`); a sale of K ≥ 2 parts has `sale:<id>:p<p>.<salt>` per part (placement.ts).
 */
export interface SaleLayout {
  readonly saleId: string;
  /** One per part, in part order; length K. */
  readonly tags: readonly string[];
}

/** Keys of one part of a split sale: a sale's key set on the part's tag, plus the transfer keys. */
export interface PartKeys extends SaleKeys {
  readonly part: number;
  readonly tag: string;
  /** string: bumped by every script that changes the part's stock or inflight (starts at Redis µs) */
  readonly version: string;
  /** string: units debited from this part by transfers not finished yet */
  readonly inflight: string;
  /** hash: pending outgoing transfer id → "<to part>:<units>:<ms debited, Redis clock>" */
  readonly transfers: string;
  /** hash: incoming transfer id → "credited" (the arbiter of crediting at most once) */
  readonly credits: string;
}

export const partTag = (saleId: string, part: number, salt: number) => `sale:${saleId}:p${part}.${salt}`;

export function partKeys(tag: string, part: number, prefix = DEFAULT_KEY_PREFIX): PartKeys {
  const keys = keysOfTag(tag, prefix);
  const base = `${prefix}:{${tag}}`;
  return {
    ...keys,
    part,
    tag,
    version: `${base}:version`,
    inflight: `${base}:inflight`,
    transfers: `${base}:transfers`,
    credits: `${base}:credits`,
  };
}

/** Every part's keys, in part order. */
export const layoutKeys = (layout: SaleLayout, prefix = DEFAULT_KEY_PREFIX): PartKeys[] =>
  layout.tags.map((tag, part) => partKeys(tag, part, prefix));

/** string on the sale's own tag: the tags of a split sale's parts, comma-separated (absent: one part). */
export const layoutKey = (saleId: string, prefix = DEFAULT_KEY_PREFIX) => `${prefix}:{sale:${saleId}}:parts`;

/** The part of a tag of `partTag` (undefined for a sale's own tag). */
export function partOfTag(tag: string): number | undefined {
  const match = /^sale:[^:}]+:p(\d+)\./.exec(tag);
  return match ? Number(match[1]) : undefined;
}

/** The tag of a key or channel (`<prefix>:{<tag>}:…`), undefined if it has none. */
export const tagOfKey = (key: string) => /\{([^}]+)\}/.exec(key)?.[1];

/**
 * The part a user buys in: FNV-1a (32 bits) of the user id, modulo the parts. Fixed for the sale's
 * life — every order, holding and Idempotency-Key of a user is in that part, and the record derives
 * an order's part from its user. User ids are ASCII (ID_PATTERN).
 */
export function partOfUser(userId: string, parts: number): number {
  if (parts <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) {
    hash ^= userId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % parts;
}

/** How a new sale's stock is split: ⌊stock / K⌋ each, the remainder one unit each to the first parts. */
export function initialShares(stock: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, p) => Math.floor(stock / parts) + (p < stock % parts ? 1 : 0));
}

/** A layout from the record's `part_tags` (null or absent: one part). */
export function layoutOf(saleId: string, partTags: readonly string[] | undefined | null): SaleLayout {
  return { saleId, tags: partTags && partTags.length > 1 ? partTags : [`sale:${saleId}`] };
}

export const isSplit = (layout: SaleLayout) => layout.tags.length > 1;

/**
 * Layouts of sales, remembered: a sale's layout never changes. Redis holds a split sale's tags (the
 * `parts` key on the sale's own tag); `fallback` — the record, where a process has one — answers when
 * Redis has no such key. An answer of the record is remembered either way; "no key" alone is not (it
 * may be a split sale whose key Redis lost), so without a fallback it is asked again next time.
 */
export class LayoutCache {
  private readonly known = new Map<string, SaleLayout>();

  constructor(
    private readonly sale: Pick<SaleContext, 'redis' | 'prefix'>,
    private readonly fallback?: (saleId: string) => Promise<SaleLayout | undefined>,
  ) {}

  /** The sale's layout (one part when nothing says otherwise). */
  async get(saleId: string): Promise<SaleLayout> {
    const known = this.known.get(saleId);
    if (known) return known;
    const tags = await this.sale.redis.get(layoutKey(saleId, this.sale.prefix));
    if (tags !== null) {
      const layout = layoutOf(saleId, tags.split(','));
      this.remember(layout);
      return layout;
    }
    const recorded = await this.fallback?.(saleId);
    if (recorded) {
      this.remember(recorded);
      return recorded;
    }
    return layoutOf(saleId, null);
  }

  /** A layout learnt elsewhere (from the record). */
  remember(layout: SaleLayout): void {
    if (this.known.size >= 4096) this.known.clear();
    this.known.set(layout.saleId, layout);
  }
}
