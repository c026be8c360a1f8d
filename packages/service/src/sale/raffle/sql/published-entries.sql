-- The published entry list: hashed ids only (no user id), with their place in the draw order and
-- whether they were given a unit (a purchases row: recorded winners, whatever became of their
-- order). Before the draw: hashes only, no places.
-- $1 sale id
-- Returns rows: entry_hash, position (null before the draw), won.
SELECT e.entry_hash, pl.place AS position, (p.user_id IS NOT NULL) AS won
  FROM raffle_entries e
  LEFT JOIN raffle_places pl ON pl.sale_id = e.sale_id AND pl.user_id = e.user_id
  LEFT JOIN purchases p ON p.sale_id = e.sale_id AND p.user_id = e.user_id
 WHERE e.sale_id = $1
 ORDER BY pl.place NULLS LAST, e.entry_hash;
