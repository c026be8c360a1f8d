-- The hashes of a raffle's recorded entries, ascending: the leaves of the close statement's Merkle
-- root (merkle.ts). Read in the draw's transaction, after its places were inserted.
-- $1 sale id
-- Returns rows: entry_hash.
SELECT entry_hash FROM raffle_entries WHERE sale_id = $1 ORDER BY entry_hash;
