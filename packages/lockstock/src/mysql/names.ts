import { createHash } from 'node:crypto';

/** MySQL refuses user-lock names longer than 64 characters (MariaDB takes 192); every name we send fits. */
export const MAX_SERVER_NAME = 64;

/**
 * Names sent as they are: lowercase ASCII letters, digits and `_ . : / -`. Nothing in them can fold
 * under any collation (MySQL ≥ 5.7 compares lock names case-insensitively, MariaDB byte for byte; a
 * `_ci` collation would also equate `é` with `e`, and PAD SPACE `a` with `a `), so two such names are
 * one lock on the server exactly when they are one string.
 */
const SENT_AS_IS = /^[a-z0-9_.:/-]+$/;

/**
 * The server-side name of a lock (`GET_LOCK`'s argument and the fencing row's key): `<prefix>:<name>`
 * when the name uses only SENT_AS_IS characters and fits in 64 characters; otherwise the stated hash,
 * `<prefix>#` followed by the lowercase hex of SHA-256 over the UTF-8 of `name`, cut at 64 characters:
 * 61 hex digits (244 bits) for a lock, 60 for an election, 60 to 58 for permits 0–9 … 100–999. `#`
 * never appears in a name sent as is, so a hashed name never equals one sent as is; and hex is
 * lowercase, so `A` and `a` are distinct locks on MySQL too. Two hashed lock names collide with
 * probability 2^-244 per pair (about 2·10^-62 among a million names: n²/2^245); colliding names would
 * be one lock (never two holders, a stranger's wait).
 *
 * `prefix` separates what lockstock keeps on the server: `ls` locks, `lse` elections, `ls<i>` permit i
 * of a semaphore (digits: no prefix is another's).
 */
export function serverName(prefix: string, name: string): string {
  const plain = `${prefix}:${name}`;
  if (plain.length <= MAX_SERVER_NAME && SENT_AS_IS.test(name)) return plain;
  const hex = createHash('sha256').update(name, 'utf8').digest('hex');
  return `${prefix}#${hex}`.slice(0, MAX_SERVER_NAME);
}

/** The server-side name of lock `name` (every exclusive family of a name shares it). */
export const lockName = (name: string): string => serverName('ls', name);

/** The server-side name of an election's lock. */
export const electionName = (name: string): string => serverName('lse', name);

/** The server-side names of a semaphore's permits, in the order they are tried. */
export const permitNames = (name: string, permits: number): string[] =>
  Array.from({ length: permits }, (_, i) => serverName(`ls${i}`, name));
