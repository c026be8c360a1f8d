import { createHash } from 'node:crypto';

/**
 * Entry hashes per Merkle leaf. A leaf per entry cost 32 s of hashing for a million entries on this
 * machine (two calls into node:crypto per node, load average 10–11), as long as the draw itself; a
 * leaf of 256 sorted hashes is hashed by PostgreSQL in the draw (drawn-leaves.sql) and leaves the
 * tree 4,000 leaves for a million entries. A proof of one entry is then its leaf's 256 hashes and
 * the path.
 */
export const LEAF_ENTRIES = 256;

/**
 * The Merkle root of a raffle's entry list, as the close statement signs it (signing.ts): the entry
 * hashes sorted ascending (the list is a set: its order says nothing), cut into leaves of
 * LEAF_ENTRIES, each leaf SHA-256(0x00 ‖ its hashes as bytes, in order), each node
 * SHA-256(0x01 ‖ left ‖ right) — RFC 6962's domain separation, so no leaf passes as a node — and an
 * unpaired last node carried up a level unchanged (RFC 6962's tree shape). The root of no entries is
 * SHA-256 of nothing. Hex in, hex out; the hashes are lowercase hex (sorted as PostgreSQL's "C"
 * collation sorts them, drawn-leaves.sql).
 *
 * A buyer's receipt names their entry hash; the published list recomputed to this root, signed at the
 * close, shows the entry is in the list the draw fixed, and that the list is the one signed then.
 */
export function merkleRoot(entryHashes: readonly string[]): string {
  const sorted = [...entryHashes].sort();
  const leaves: Buffer[] = [];
  for (let i = 0; i < sorted.length; i += LEAF_ENTRIES) {
    const hashes = Buffer.from(sorted.slice(i, i + LEAF_ENTRIES).join(''), 'hex');
    leaves.push(
      createHash('sha256')
        .update(Buffer.from([0]))
        .update(hashes)
        .digest(),
    );
  }
  return rootOfLeaves(leaves);
}

/** The root over leaves already hashed (SHA-256(0x00 ‖ …), in order): the draw's half of the work. */
export function rootOfLeaves(leaves: readonly Uint8Array[]): string {
  let level: Buffer[] = leaves.map((leaf) => Buffer.from(leaf));
  if (level.length === 0) return createHash('sha256').digest('hex');
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const left = level[i] as Buffer;
      const right = level[i + 1];
      next.push(
        right
          ? createHash('sha256')
              .update(Buffer.from([1]))
              .update(left)
              .update(right)
              .digest()
          : left,
      );
    }
    level = next;
  }
  return (level[0] as Buffer).toString('hex');
}
