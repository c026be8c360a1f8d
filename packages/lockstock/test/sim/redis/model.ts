import { COMMANDS } from './commands.js';

import { RedisError, type Reply } from './reply.js';

export type { Reply } from './reply.js';
export { RedisError } from './reply.js';

type Zset = Map<string, number>;
type Value =
  | { readonly type: 'string'; value: string }
  | { readonly type: 'hash'; value: Map<string, string> }
  | { readonly type: 'zset'; value: Zset };

interface Entry {
  value: Value;
  /** Absolute expiry, ms on the model's clock; undefined: none. */
  expiresAt: number | undefined;
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
const NOT_INTEGER = 'ERR value is not an integer or out of range';
const NOT_FLOAT = 'ERR value is not a valid float';
const SYNTAX = 'ERR syntax error';
const OK = Object.freeze({ ok: 'OK' });

/** The model's epoch: its clock reads true simulated time plus this (mid-November 2023). */
export const EPOCH_MS = 1_700_000_000_000;

/** A double as Redis prints it in RESP2 (`%.17g`, as fpconv_dtoa and addReplyDouble do). */
export function formatDouble(x: number): string {
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (Number.isInteger(x) && Math.abs(x) < 1e17) return x.toFixed(0);
  // %.17g: 17 significant digits, trailing zeros dropped, exponent form outside [1e-4, 1e17).
  const exp = Math.floor(Math.log10(Math.abs(x)));
  if (exp < -4 || exp >= 17) {
    const [mantissa, e] = x.toExponential(16).split('e') as [string, string];
    const m = mantissa.includes('.') ? mantissa.replace(/0+$/, '').replace(/\.$/, '') : mantissa;
    const n = Number(e);
    return `${m}e${n < 0 ? '-' : '+'}${String(Math.abs(n)).padStart(2, '0')}`;
  }
  const fixed = x.toPrecision(17);
  return fixed.includes('.') ? fixed.replace(/0+$/, '').replace(/\.$/, '') : fixed;
}

function parseInteger(text: string): number {
  if (!/^-?\d+$/.test(text) || (text.length > 1 && /^-?0/.test(text))) throw new RedisError(NOT_INTEGER);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new RedisError(NOT_INTEGER);
  return n;
}

function parseScore(text: string): number {
  const t = text.toLowerCase();
  if (t === 'inf' || t === '+inf') return Infinity;
  if (t === '-inf') return -Infinity;
  const n = Number(text);
  if (text.trim() === '' || text.trim() !== text || Number.isNaN(n)) throw new RedisError(NOT_FLOAT);
  return n;
}

/** A ZRANGEBYSCORE bound: `(5` exclusive, `5` inclusive, `-inf`, `+inf`. */
function parseBound(text: string): { value: number; open: boolean } {
  if (text.startsWith('(')) return { value: parseScoreBound(text.slice(1)), open: true };
  return { value: parseScoreBound(text), open: false };
}

function parseScoreBound(text: string): number {
  try {
    return parseScore(text);
  } catch {
    throw new RedisError('ERR min or max is not a float');
  }
}

/** Members by score, then by member (byte order), as a Redis sorted set keeps them. */
function sorted(zset: Zset): Array<[string, number]> {
  return [...zset].sort(([a, x], [b, y]) => (x !== y ? x - y : a < b ? -1 : a > b ? 1 : 0));
}

/**
 * An in-memory model of the Redis commands lockstock's Lua scripts (src/redis/**\/*.lua) and the
 * Redis adapter call — only those, each written against Redis 7's documented semantics and checked
 * against a real redis-server by differential.test.ts. Time is the simulation's (ms, true time plus
 * a fixed epoch so numbers have a realistic size); keys expire lazily, as Redis's do when read.
 *
 * Values are RESP2 replies: a string (bulk), a number (integer), null (nil), an array, `{ ok }`
 * (status) — and errors are thrown as RedisError, as Redis answers them.
 */
export class RedisModel {
  private readonly data = new Map<string, Entry>();
  /** SPUBLISH's deliveries: channel → listeners (the fake clients' subscriptions). */
  private readonly channels = new Map<string, Set<(channel: string, message: string) => void>>();
  /** Every command a script or client ran, for the differential test's report (when set). */
  trace: string[][] | undefined;

  /** `clock`: true simulated time in ms (the model adds EPOCH_MS). */
  constructor(private readonly clock: () => number) {}

  /** The server's clock in µs (integer), as TIME reads it. */
  private micros(): number {
    return Math.floor((EPOCH_MS + this.clock()) * 1000);
  }

  /** The server's clock in ms (integer): what expiries are set from and compared with. */
  nowMs(): number {
    return Math.floor(this.micros() / 1000);
  }

  /** The live entry of `key` (an expired one is deleted first, as Redis does on access). */
  private entry(key: string): Entry | undefined {
    const entry = this.data.get(key);
    if (entry?.expiresAt !== undefined && this.nowMs() > entry.expiresAt) {
      this.data.delete(key);
      return undefined;
    }
    return entry;
  }

  private typed<T extends Value['type']>(key: string, type: T): Extract<Value, { type: T }> | undefined {
    const entry = this.entry(key);
    if (!entry) return undefined;
    if (entry.value.type !== type) throw new RedisError(WRONGTYPE);
    return entry.value as Extract<Value, { type: T }>;
  }

  private hash(key: string, create: boolean): Map<string, string> | undefined {
    const found = this.typed(key, 'hash');
    if (found || !create) return found?.value;
    const value = new Map<string, string>();
    this.data.set(key, { value: { type: 'hash', value }, expiresAt: undefined });
    return value;
  }

  private zset(key: string, create: boolean): Zset | undefined {
    const found = this.typed(key, 'zset');
    if (found || !create) return found?.value;
    const value: Zset = new Map();
    this.data.set(key, { value: { type: 'zset', value }, expiresAt: undefined });
    return value;
  }

  /** An emptied hash or zset is no key at all, as in Redis. */
  private dropIfEmpty(key: string, map: Map<string, unknown>): void {
    if (map.size === 0) this.data.delete(key);
  }

  subscribe(channel: string, listener: (channel: string, message: string) => void): () => void {
    let set = this.channels.get(channel);
    if (!set) this.channels.set(channel, (set = new Set()));
    set.add(listener);
    return () => void set.delete(listener);
  }

  /** Every key with its type, value and PTTL, sorted: to compare with a real server's. */
  dump(): Array<[string, string, unknown, number]> {
    return this.keys()
      .sort()
      .map((key) => {
        const { value } = this.entry(key)!;
        const shown =
          value.type === 'string'
            ? value.value
            : value.type === 'hash'
              ? [...value.value].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              : sorted(value.value).map(([m, s]) => [m, formatDouble(s)]);
        return [key, value.type, shown, this.pttl(key)];
      });
  }

  /** Every key that exists now (for the end-of-run leak check). */
  keys(): string[] {
    return [...this.data.keys()].filter((key) => this.entry(key) !== undefined);
  }

  /** Runs one command (name case-insensitive, arguments as strings). Throws RedisError. */
  command(name: string, args: readonly string[]): Reply {
    this.trace?.push([name.toLowerCase(), ...args]);
    const handler = COMMANDS[name.toLowerCase()];
    if (!handler) throw new RedisError(`ERR unknown command '${name}' (not in the model)`);
    return handler(this, args);
  }

  // --- strings and keys -----------------------------------------------------------------------

  get(key: string): Reply {
    return this.typed(key, 'string')?.value ?? null;
  }

  set(args: readonly string[]): Reply {
    const [key, value] = args as [string, string];
    let nx = false;
    let xx = false;
    let px: number | undefined;
    let keepTtl = false;
    for (let i = 2; i < args.length; i++) {
      const option = args[i]!.toUpperCase();
      if (option === 'NX') nx = true;
      else if (option === 'XX') xx = true;
      else if (option === 'KEEPTTL') keepTtl = true;
      else if ((option === 'PX' || option === 'EX') && i + 1 < args.length) {
        const n = parseInteger(args[++i]!);
        if (n <= 0) throw new RedisError("ERR invalid expire time in 'set' command");
        px = option === 'PX' ? n : n * 1000;
      } else throw new RedisError(SYNTAX);
    }
    if (nx && xx) throw new RedisError(SYNTAX);
    const existing = this.entry(key);
    if ((nx && existing) || (xx && !existing)) return null;
    const expiresAt = px !== undefined ? this.nowMs() + px : keepTtl ? existing?.expiresAt : undefined;
    this.data.set(key, { value: { type: 'string', value }, expiresAt });
    return OK;
  }

  del(keys: readonly string[]): number {
    let n = 0;
    for (const key of keys) if (this.entry(key) && this.data.delete(key)) n++;
    return n;
  }

  exists(keys: readonly string[]): number {
    return keys.filter((key) => this.entry(key) !== undefined).length;
  }

  incrBy(key: string, by: number): number {
    const entry = this.entry(key);
    if (entry && entry.value.type !== 'string') throw new RedisError(WRONGTYPE);
    const next = (entry ? parseInteger((entry.value as { value: string }).value) : 0) + by;
    if (entry) (entry.value as { value: string }).value = String(next);
    else this.data.set(key, { value: { type: 'string', value: String(next) }, expiresAt: undefined });
    return next;
  }

  /** PEXPIRE key ms [NX|XX|GT|LT] (Redis 7: a key without expiry counts as an infinite TTL). */
  pexpire(key: string, ms: string, condition?: string): number {
    const n = parseInteger(ms);
    const entry = this.entry(key);
    if (!entry) return 0;
    const when = this.nowMs() + n;
    const current = entry.expiresAt;
    switch (condition?.toUpperCase()) {
      case undefined:
        break;
      case 'NX':
        if (current !== undefined) return 0;
        break;
      case 'XX':
        if (current === undefined) return 0;
        break;
      case 'GT':
        if (current === undefined || when <= current) return 0;
        break;
      case 'LT':
        if (current !== undefined && when >= current) return 0;
        break;
      default:
        throw new RedisError(`ERR Unsupported option ${condition}`);
    }
    // A time in the past deletes the key at once (Redis 7 does so rather than set a past expiry).
    if (n <= 0) this.data.delete(key);
    else entry.expiresAt = when;
    return 1;
  }

  pttl(key: string): number {
    const entry = this.entry(key);
    if (!entry) return -2;
    return entry.expiresAt === undefined ? -1 : Math.max(0, entry.expiresAt - this.nowMs());
  }

  persist(key: string): number {
    const entry = this.entry(key);
    if (!entry || entry.expiresAt === undefined) return 0;
    entry.expiresAt = undefined;
    return 1;
  }

  time(): Reply {
    const us = this.micros();
    return [String(Math.floor(us / 1e6)), String(us % 1e6)];
  }

  spublish(channel: string, message: string): number {
    const listeners = [...(this.channels.get(channel) ?? [])];
    for (const listener of listeners) listener(channel, message);
    return listeners.length;
  }

  // --- hashes ----------------------------------------------------------------------------------

  hset(key: string, pairs: readonly string[], onlyNew = false): number {
    if (pairs.length === 0 || pairs.length % 2 !== 0)
      throw new RedisError(`ERR wrong number of arguments for '${onlyNew ? 'hsetnx' : 'hset'}' command`);
    const hash = this.hash(key, true)!;
    let added = 0;
    for (let i = 0; i < pairs.length; i += 2) {
      const field = pairs[i]!;
      if (!hash.has(field)) added++;
      else if (onlyNew) continue;
      hash.set(field, pairs[i + 1]!);
    }
    return added;
  }

  hincrby(key: string, field: string, by: string): number {
    const increment = parseInteger(by);
    const hash = this.hash(key, true)!;
    const current = hash.get(field);
    let base = 0;
    if (current !== undefined) {
      try {
        base = parseInteger(current);
      } catch {
        throw new RedisError('ERR hash value is not an integer');
      }
    }
    hash.set(field, String(base + increment));
    return base + increment;
  }

  hdel(key: string, fields: readonly string[]): number {
    const hash = this.hash(key, false);
    if (!hash) return 0;
    let n = 0;
    for (const field of fields) if (hash.delete(field)) n++;
    this.dropIfEmpty(key, hash);
    return n;
  }

  hget(key: string, field: string): Reply {
    return this.hash(key, false)?.get(field) ?? null;
  }

  hgetall(key: string): Reply {
    return [...(this.hash(key, false) ?? new Map<string, string>())].flat();
  }

  // --- sorted sets -----------------------------------------------------------------------------

  zadd(key: string, args: readonly string[]): number {
    let i = 0;
    let nx = false;
    let xx = false;
    for (; i < args.length; i++) {
      const option = args[i]!.toUpperCase();
      if (option === 'NX') nx = true;
      else if (option === 'XX') xx = true;
      else break;
    }
    const pairs = args.slice(i);
    if (pairs.length === 0 || pairs.length % 2 !== 0) throw new RedisError(SYNTAX);
    if (nx && xx) throw new RedisError('ERR XX and NX options at the same time are not compatible');
    const scores = pairs.filter((_, j) => j % 2 === 0).map(parseScore);
    const zset = this.zset(key, !xx);
    if (!zset) return 0;
    let added = 0;
    for (let j = 0; j < scores.length; j++) {
      const member = pairs[2 * j + 1]!;
      const exists = zset.has(member);
      if ((nx && exists) || (xx && !exists)) continue;
      if (!exists) added++;
      zset.set(member, scores[j]!);
    }
    this.dropIfEmpty(key, zset);
    return added;
  }

  zrem(key: string, members: readonly string[]): number {
    const zset = this.zset(key, false);
    if (!zset) return 0;
    let n = 0;
    for (const member of members) if (zset.delete(member)) n++;
    this.dropIfEmpty(key, zset);
    return n;
  }

  /** ZRANGE key start stop [WITHSCORES], by index (negative from the end). */
  zrange(key: string, start: string, stop: string, rest: readonly string[]): Reply {
    const withScores = rest.length === 1 && rest[0]!.toUpperCase() === 'WITHSCORES';
    if (rest.length > 0 && !withScores) throw new RedisError(SYNTAX);
    const all = sorted(this.zset(key, false) ?? new Map());
    let from = parseInteger(start);
    let to = parseInteger(stop);
    if (from < 0) from = Math.max(0, all.length + from);
    if (to < 0) to = all.length + to;
    to = Math.min(to, all.length - 1);
    const picked = from > to ? [] : all.slice(from, to + 1);
    return withScores ? picked.flatMap(([m, s]) => [m, formatDouble(s)]) : picked.map(([m]) => m);
  }

  private inRange(min: string, max: string): (score: number) => boolean {
    const lo = parseBound(min);
    const hi = parseBound(max);
    return (s) => (lo.open ? s > lo.value : s >= lo.value) && (hi.open ? s < hi.value : s <= hi.value);
  }

  zrangebyscore(key: string, min: string, max: string, rest: readonly string[]): Reply {
    const withScores = rest.length === 1 && rest[0]!.toUpperCase() === 'WITHSCORES';
    if (rest.length > 0 && !withScores) throw new RedisError(SYNTAX);
    const test = this.inRange(min, max);
    const picked = sorted(this.zset(key, false) ?? new Map()).filter(([, s]) => test(s));
    return withScores ? picked.flatMap(([m, s]) => [m, formatDouble(s)]) : picked.map(([m]) => m);
  }

  zremrangebyscore(key: string, min: string, max: string): number {
    const test = this.inRange(min, max);
    const zset = this.zset(key, false);
    if (!zset) return 0;
    let n = 0;
    for (const [member, score] of [...zset]) if (test(score) && zset.delete(member)) n++;
    this.dropIfEmpty(key, zset);
    return n;
  }

  zpopmin(key: string): Reply {
    const zset = this.zset(key, false);
    if (!zset) return [];
    const [first] = sorted(zset);
    if (!first) return [];
    zset.delete(first[0]);
    this.dropIfEmpty(key, zset);
    return [first[0], formatDouble(first[1])];
  }

  zscore(key: string, member: string): Reply {
    const score = this.zset(key, false)?.get(member);
    return score === undefined ? null : formatDouble(score);
  }
}
