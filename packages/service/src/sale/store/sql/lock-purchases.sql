-- Locks and returns what these users already hold in these sales. A lateral lookup per pair: probes
-- of the primary key, where a join against the whole table would scan it (and slow down as it grows).
-- $1 sale ids (bigint[]), $2 user ids (text[]), pairwise
-- Returns sale_id (text), user_id, quantity.
SELECT p.sale_id::text AS sale_id, p.user_id, p.quantity
  FROM unnest($1::bigint[], $2::text[]) AS u (sale_id, user_id)
 CROSS JOIN LATERAL (
       SELECT sale_id, user_id, quantity
         FROM purchases
        WHERE sale_id = u.sale_id AND user_id = u.user_id
          FOR UPDATE) AS p;
