/**
 * Redis plumbing that lockstock's locks are built on, exported as `lockstock/redis` for code that
 * writes its own atomic scripts (the flash-sale service does): `.lua` files loaded once and run with
 * EVALSHA (NOSCRIPT fallback, coalesced writes), connection resolution, key-name rules.
 *
 * @module lockstock/redis
 */
export { loadLuaScript, ScriptRunner, type LuaScript, type ScriptArg } from './scripts.js';
export {
  resolveRedis,
  duplicateClient,
  isCluster,
  type RedisClient,
  type RedisConnectionOptions,
  type RedisSource,
} from './connection.js';
export { DEFAULT_KEY_PREFIX, assertKeyName, assertKeyPrefix } from './keys.js';
