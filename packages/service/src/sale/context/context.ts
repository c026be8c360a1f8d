import { DEFAULT_KEY_PREFIX, ScriptRunner } from 'lockstock/redis';
import { saleKeyspace, type SaleKeyspace } from '../keys.js';
import type { SaleRedis } from '../redis.js';
import { queries } from '../store/queries.js';

export type { SaleKeyspace } from '../keys.js';

/** What may differ between processes (tests, tools): everything else is derived. */
export interface SaleContextOptions {
  /** The prefix of every key the sale writes. @default lockstock's DEFAULT_KEY_PREFIX ('ls') */
  keyPrefix?: string;
  /** The process's clock for what the sale decides in JavaScript (ms since the epoch). @default Date.now */
  now?: () => number;
}

/**
 * Everything a part of the sale needs besides the record's connection, built once per process (per
 * thread: the order thread builds its own on its own connection) and handed to every part: the Redis
 * connection, its keys with their prefix, one ScriptRunner (one write coalescer: the process's
 * scripts of a tick leave together), the record's statements, and the clock. Parts take it instead of
 * rebuilding pieces of it, so a prefix or a clock cannot differ between two parts of one process.
 */
export interface SaleContext {
  readonly redis: SaleRedis;
  readonly prefix: string;
  readonly keys: SaleKeyspace;
  readonly scripts: ScriptRunner;
  /** The record's SQL statements (store/sql/*.sql, each with its header). */
  readonly queries: typeof queries;
  readonly now: () => number;
}

/** The process's sale context on `redis` (call it once, where the process opens its connections). */
export function saleContext(redis: SaleRedis, options: SaleContextOptions = {}): SaleContext {
  const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  return Object.freeze({
    redis,
    prefix,
    keys: saleKeyspace(prefix),
    scripts: new ScriptRunner(redis),
    queries,
    now: options.now ?? Date.now,
  });
}
