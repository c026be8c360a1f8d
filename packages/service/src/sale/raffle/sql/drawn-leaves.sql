-- The leaves of the close statement's Merkle tree (merkle.ts): the raffle's recorded entry hashes in
-- ascending byte order ("C" collation: lowercase hex sorts as its bytes), as bytes end to end, cut
-- into leaves of $2 hashes, each SHA-256(0x00 ‖ its hashes). One sort and one aggregate (a window
-- numbering the hashes and a GROUP BY sorted them twice, on disk: 13 s for a million under load,
-- 4 s this way); hashed here, in C, in the close's transaction (after draw-settings.sql).
-- $1 sale id, $2 entries per leaf (merkle.ts LEAF_ENTRIES)
-- Returns rows: leaf (bytea), entries (the list's length, on every row), in leaf order; none for no
--   entries.
WITH list AS (
  SELECT string_agg(decode(entry_hash, 'hex'), ''::bytea ORDER BY entry_hash COLLATE "C") AS bytes
    FROM raffle_entries
   WHERE sale_id = $1
)
SELECT sha256('\x00'::bytea || substring(list.bytes FROM i * 32 * $2 + 1 FOR 32 * $2)) AS leaf,
       octet_length(list.bytes) / 32 AS entries
  FROM list, generate_series(0, (octet_length(list.bytes) - 1) / (32 * $2)) AS i
 ORDER BY i;
