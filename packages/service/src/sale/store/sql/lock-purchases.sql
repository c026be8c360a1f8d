-- Locks and returns what these users already hold in these sales.
-- $1 sale ids (bigint[]), $2 user ids (text[]), pairwise
-- Returns sale_id (text), user_id, quantity.
SELECT p.sale_id::text AS sale_id, p.user_id, p.quantity
  FROM purchases p
  JOIN unnest($1::bigint[], $2::text[]) AS u (sale_id, user_id)
    ON p.sale_id = u.sale_id AND p.user_id = u.user_id
   FOR UPDATE OF p;
