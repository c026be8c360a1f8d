import { createVerifier } from 'fast-jwt';
import { ID_PATTERN } from '../sale/keys.js';

/** The authenticated caller: the user id comes only from the verified token. */
export interface Caller {
  readonly userId: string;
  readonly admin: boolean;
}

/** Why a bearer token was refused, as a sentence for the client. */
export class TokenRefusedError extends Error {
  override readonly name = 'TokenRefusedError';
  readonly code = 'unauthorized';
}

export interface TokenVerifierOptions {
  /** Verified tokens remembered at most (at least 2); the oldest are forgotten first. @default 50000 */
  maxEntries?: number;
  /** Longest a verified token is trusted without checking it again, ms (its `exp` cuts it shorter). @default 600000 */
  maxAgeMs?: number;
}

interface Entry {
  readonly caller: Caller;
  /** Date.now() after which the token is verified again (and refused if it expired). */
  readonly until: number;
}

const BEARER = /^Bearer +(\S+)$/i;

/**
 * A bounded map in two generations: new entries go into the young one; when it is full, the old one is
 * dropped whole and the young one becomes old. A hit in the old generation moves the entry back into
 * the young one, so tokens in use survive. Every operation is O(1): evicting one entry at a time with
 * `map.keys().next()` walks over the holes earlier deletions left at the front of the Map (V8 compacts
 * them only on a rehash): ~4% of the server's CPU samples under purchases by distinct buyers.
 */
class TwoGenerationCache<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  private readonly generationSize: number;

  constructor(maxEntries: number) {
    this.generationSize = Math.max(1, Math.floor(maxEntries / 2));
  }

  get(key: string): V | undefined {
    const young = this.young.get(key);
    if (young !== undefined) return young;
    const old = this.old.get(key);
    if (old !== undefined) {
      this.old.delete(key);
      this.set(key, old);
    }
    return old;
  }

  set(key: string, value: V): void {
    if (this.young.size >= this.generationSize) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }

  has(key: string): boolean {
    return this.young.has(key) || this.old.has(key);
  }

  delete(key: string): void {
    this.young.delete(key);
    this.old.delete(key);
  }

  get size(): number {
    return this.young.size + this.old.size;
  }
}

/**
 * Admission to the token cache, TinyLFU's "doorkeeper": a token is cached only when it comes back.
 * In a flash sale most tokens are presented once; caching each of them kept tens of thousands of
 * entries alive through the garbage collector for nothing (~5% of `serve`'s purchases/s under wrk
 * with distinct buyers) and pushed the callers who do come back out of the cache. A direct-mapped
 * table of hashes of the signature's tail, overwritten as new tokens come: a mark lasts until a later
 * token lands in its slot (after ~131,000 tokens on average). A lost mark or a collision costs only a
 * verification, or a cached entry.
 */
class Doorkeeper {
  private static readonly SLOTS_LOG2 = 17;
  private readonly marks = new Uint32Array(1 << Doorkeeper.SLOTS_LOG2);

  /** Whether `token` was marked before (most likely: see above); marks it. */
  seenBefore(token: string): boolean {
    // FNV-1a over the last 12 characters: a verified token's signature is random there.
    let hash = 0x811c9dc5;
    for (let i = Math.max(0, token.length - 12); i < token.length; i++) {
      hash = Math.imul(hash ^ token.charCodeAt(i), 0x01000193);
    }
    const mark = hash >>> 0 || 1; // 0 is an empty slot
    const slot = mark >>> (32 - Doorkeeper.SLOTS_LOG2);
    if (this.marks[slot] === mark) return true;
    this.marks[slot] = mark;
    return false;
  }
}

/**
 * Bearer tokens (JWT, HS256 only) to callers, with a bounded cache of verified tokens: a buyer who
 * presses "buy" again, or a page that polls, costs a Map lookup instead of base64, JSON and an HMAC.
 * A token is cached from its second verification on (Doorkeeper). The cache key is the whole token,
 * signature included, so only a token verified before can hit; an entry lasts until the token's
 * `exp` (or `maxAgeMs`, whichever is first); refusals are never cached.
 * fast-jwt verifies directly: @fastify/jwt's per-request option merging and second decode were most of
 * the authentication cost.
 */
export class TokenVerifier {
  private readonly verify: (token: string) => { sub?: unknown; role?: unknown; exp?: unknown };
  private readonly cache: TwoGenerationCache<Entry>;
  private readonly doorkeeper = new Doorkeeper();
  private readonly maxAgeMs: number;

  constructor(secret: string, options: TokenVerifierOptions = {}) {
    // Never `none`, never another algorithm.
    this.verify = createVerifier({ key: secret, algorithms: ['HS256'] });
    this.cache = new TwoGenerationCache(options.maxEntries ?? 50_000);
    this.maxAgeMs = options.maxAgeMs ?? 600_000;
  }

  /** The caller an `Authorization` header names; throws TokenRefusedError otherwise. */
  callerOf(authorization: string | undefined): Caller {
    const token = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
    if (token === undefined) {
      throw new TokenRefusedError('Send a bearer token: Authorization: Bearer <token>.');
    }
    const now = Date.now();
    const cached = this.cache.get(token);
    if (cached) {
      if (now < cached.until) return cached.caller;
      this.cache.delete(token);
    }
    let payload: ReturnType<typeof this.verify>;
    try {
      payload = this.verify(token);
    } catch (error) {
      const expired = (error as { code?: string }).code === 'FAST_JWT_EXPIRED';
      throw new TokenRefusedError(expired ? 'The token has expired.' : 'The token is not valid.');
    }
    if (typeof payload.sub !== 'string' || !ID_PATTERN.test(payload.sub)) {
      throw new TokenRefusedError('The token has no valid subject (sub).');
    }
    const caller: Caller = { userId: payload.sub, admin: payload.role === 'admin' };
    // Marked only once verified: refused tokens cannot wipe the marks of valid ones.
    if (this.doorkeeper.seenBefore(token)) {
      const exp = typeof payload.exp === 'number' ? payload.exp * 1000 : Infinity;
      this.cache.set(token, { caller, until: Math.min(exp, now + this.maxAgeMs) });
    }
    return caller;
  }

  /** Whether this token is remembered now (for tests). */
  remembers(token: string): boolean {
    return this.cache.has(token);
  }

  /** Tokens remembered now (for tests). */
  get size(): number {
    return this.cache.size;
  }
}
