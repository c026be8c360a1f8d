-- The leaves of the close statement's Merkle tree (merkle.ts): the raffle's recorded entry hashes in
-- ascending byte order ("C" collation: lowercase hex sorts as its bytes), cut into leaves of 256, each
-- SHA-256(0x00 ‖ its hashes as bytes, in order). Hashed here, in C, in the draw's transaction.
-- $1 sale id, $2 entries per leaf (merkle.ts LEAF_ENTRIES)
-- Returns rows: leaf (bytea), in leaf order.
SELECT sha256('\x00'::bytea || string_agg(decode(entry_hash, 'hex'), ''::bytea ORDER BY entry_hash COLLATE "C")) AS leaf
  FROM (SELECT entry_hash, (row_number() OVER (ORDER BY entry_hash COLLATE "C") - 1) / $2 AS leaf_no
          FROM raffle_entries
         WHERE sale_id = $1) AS e
 GROUP BY leaf_no
 ORDER BY leaf_no;
