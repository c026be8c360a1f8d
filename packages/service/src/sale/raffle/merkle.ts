import { createHash } from 'node:crypto';

/**
 * The Merkle root of a raffle's entry list, as the close statement signs it (signing.ts): the entry
 * hashes sorted ascending (the list is a set: its order says nothing), each leaf SHA-256(0x00 ‖ entry
 * hash as bytes), each node SHA-256(0x01 ‖ left ‖ right) — RFC 6962's domain separation, so no leaf
 * passes as a node — and an unpaired last node carried up a level unchanged (RFC 6962's tree shape).
 * The root of no entries is SHA-256 of nothing. Hex in, hex out.
 *
 * A buyer's receipt names their entry hash; the published list recomputed to this root, signed at the
 * close, shows the entry is in the list the draw fixed, and that the list is the one signed then.
 */
export function merkleRoot(entryHashes: readonly string[]): string {
  let level: Buffer[] = leaves(entryHashes);
  if (level.length === 0) return createHash('sha256').digest('hex');
  while (level.length > 1) level = up(level);
  return (level[0] as Buffer).toString('hex');
}

const leaf = (hash: string) =>
  createHash('sha256')
    .update(Buffer.from([0]))
    .update(Buffer.from(hash, 'hex'))
    .digest();
const parent = (left: Buffer, right: Buffer) =>
  createHash('sha256')
    .update(Buffer.from([1]))
    .update(left)
    .update(right)
    .digest();
const leaves = (hashes: readonly string[]) => [...hashes].sort().map(leaf);

function up(level: readonly Buffer[]): Buffer[] {
  const next: Buffer[] = [];
  for (let i = 0; i < level.length; i += 2) {
    const left = level[i] as Buffer;
    const right = level[i + 1];
    next.push(right ? parent(left, right) : left);
  }
  return next;
}
