-- Gives units back from users' holdings (cancelled and expired orders). An UPDATE, not the upsert of
-- add-purchases.sql: PostgreSQL checks an upsert's proposed row (here negative) before it finds the
-- conflict. The table's CHECK refuses a holding below zero.
-- $1 sale ids (bigint[]), $2 user ids (text[]), $3 units given back (int[], positive)
-- Returns the number of holdings changed (the caller expects every one).
UPDATE purchases p
   SET quantity = p.quantity - d.units
  FROM unnest($1::bigint[], $2::text[], $3::int[]) AS d (sale_id, user_id, units)
 WHERE p.sale_id = d.sale_id AND p.user_id = d.user_id
   AND p.sale_id = ANY ($1::bigint[]) AND p.user_id = ANY ($2::text[]); -- index scan, not a table scan
