import { createHash } from 'node:crypto';

/**
 * Lock names → PostgreSQL advisory-lock keys (one bigint each). The stated hash: the first 8 bytes of
 * SHA-256 over the UTF-8 of `lockstock:lock:<name>`, read as a signed big-endian 64-bit integer. The
 * same key in SQL, for psql or another language:
 *
 *   ('x' || substr(encode(sha256(convert_to('lockstock:lock:' || name, 'UTF8')), 'hex'), 1, 16))::bit(64)::bigint
 *
 * Every exclusive family (mutex, reentrant, fair, spin), both sides of a read-write lock and
 * withTransactionLock share a name's key — one lock per name, as on Redis. Two different names
 * collide with probability 2^-64 per pair: about 3·10^-8 among a million names (birthday bound
 * n²/2^65); colliding names would exclude each other (safe, never two holders, but a stranger's wait).
 * The keys share the database's advisory-lock space with every other user of pg_advisory_lock(bigint).
 */
export function lockKey(name: string): bigint {
  return key(`lockstock:lock:${name}`);
}

/**
 * The keys of a semaphore's permits: permit i of `name` is `lockstock:permit:<i>:<name>` hashed as
 * above (the index is digits before the first ':', so no two (index, name) pairs share an input).
 */
export function permitKeys(name: string, permits: number): bigint[] {
  return Array.from({ length: permits }, (_, i) => key(`lockstock:permit:${i}:${name}`));
}

/** The LISTEN/NOTIFY channel of a semaphore's releases: a plain identifier (no quoting issues). */
export function permitChannel(name: string): string {
  return `lockstock_${createHash('sha256').update(`lockstock:channel:${name}`, 'utf8').digest('hex').slice(0, 24)}`;
}

function key(input: string): bigint {
  return createHash('sha256').update(input, 'utf8').digest().readBigInt64BE(0);
}
