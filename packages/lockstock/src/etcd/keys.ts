/**
 * Where a lock lives in etcd. Every lock family of one name has its own queue directory,
 * `<prefix>/<name>/<family>/` (a mutex and a semaphore named alike are two locks, as on the local
 * backend); a waiter's or holder's key in it is `<dir><session lease id, hex>/<owner>` — one key per
 * session and owner, as etcd's Mutex keys `<pfx>/<lease id>`, so an attempt finds its own key again
 * without remembering it, and a key goes with the session that put it.
 *
 * The name is URI-encoded: it never contains '/', so no lock's directory is a prefix of another's.
 */

const MAX_NAME_LENGTH = 512;

export type Family = 'mutex' | 'reentrant' | 'fair' | 'spin' | 'rw' | 'semaphore' | 'latch' | 'election';

export function assertLockName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new TypeError(`Lock name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters`);
  }
}

/** `<prefix>/<encoded name>/<family>`: the latch's key, the semaphore's permit count. */
export function familyKey(prefix: string, name: string, family: Family): string {
  assertLockName(name);
  return `${prefix}/${encodeURIComponent(name)}/${family}`;
}

/** The queue directory of a lock: every holder's and waiter's key starts with it. */
export const queueDir = (prefix: string, name: string, family: Family): string =>
  `${familyKey(prefix, name, family)}/`;

/** The key of `owner`'s place in `dir` for the session with lease `leaseHex`. */
export const ownerKey = (dir: string, leaseHex: string, owner: string): string =>
  `${dir}${leaseHex}/${owner}`;

/** The owner a queue key belongs to (what follows the lease id). */
export function ownerOf(dir: string, key: string): string {
  const rest = key.slice(dir.length);
  return rest.slice(rest.indexOf('/') + 1);
}

/** A session's sentinel: a key on its lease whose deletion says the lease is gone (see EtcdSession). */
export const sessionKey = (prefix: string, leaseHex: string): string => `${prefix}/:session/${leaseHex}`;

/** The end of the key range of every key starting with `prefix` (etcd's GetPrefixRangeEnd). */
export function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // every byte 0xff: the range runs to the end of the keyspace
}
