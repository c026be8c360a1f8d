/**
 * Key naming. Every key of one lock (or one sale) shares the hash tag `{name}`, so scripts touching
 * several of them stay on one Redis Cluster slot, and the lock's shard channel lives on that slot too.
 */

/** @default 'ls' */
export const DEFAULT_KEY_PREFIX = 'ls';

const MAX_NAME_LENGTH = 512;

/** Throws a TypeError unless `name` can be embedded in a hash tag. */
export function assertKeyName(kind: string, name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new TypeError(`${kind} name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
  }
  if (name.includes('{') || name.includes('}')) {
    throw new TypeError(`${kind} name must not contain '{' or '}' (they delimit Redis Cluster hash tags)`);
  }
}

/**
 * Checks a client's `keyPrefix`: a non-empty string without '{' or '}' (lock keys put the lock name in
 * a hash tag, and a brace in the prefix would move it). Throws TypeError otherwise.
 */
export function assertKeyPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix !== 'string' || prefix.length === 0 || /[{}]/.test(prefix)) {
    throw new TypeError("keyPrefix must be a non-empty string without '{' or '}'");
  }
}
