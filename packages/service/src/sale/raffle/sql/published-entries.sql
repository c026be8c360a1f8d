-- The published entry list: hashed ids only (no user id), with their place in the draw order and
-- whether they were given a unit (a purchases row: recorded winners, whatever became of their
-- order). Before the draw: hashes only, no places. (The places: the raffle's blocks unnested,
-- 1,024 a block, migration 014.)
-- $1 sale id
-- Returns rows: entry_hash, position (null before the draw), won.
SELECT e.entry_hash, pl.place AS position, (p.user_id IS NOT NULL) AS won
  FROM raffle_entries e
  LEFT JOIN (SELECT u.user_id, (b.block * 1024 + u.i)::integer AS place
               FROM raffle_place_blocks b, unnest(b.user_ids) WITH ORDINALITY AS u(user_id, i)
              WHERE b.sale_id = $1) AS pl ON pl.user_id = e.user_id
  LEFT JOIN purchases p ON p.sale_id = e.sale_id AND p.user_id = e.user_id
 WHERE e.sale_id = $1
 ORDER BY pl.place NULLS LAST, e.entry_hash;
