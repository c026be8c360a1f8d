-- One buyer's entry, with its place in the draw (null before it; raffle_place(), migration 014) and
-- the order it won if any.
-- $1 sale id, $2 user id
-- Returns zero or one row: entry_hash, position, order_id (text, null: none), order_status.
SELECT e.entry_hash, raffle_place(e.sale_id, e.user_id) AS position, o.id::text AS order_id,
       o.status AS order_status
  FROM raffle_entries e
  LEFT JOIN LATERAL (
       SELECT id, status FROM orders
        WHERE sale_id = e.sale_id AND user_id = e.user_id
        ORDER BY id LIMIT 1) AS o ON true
 WHERE e.sale_id = $1 AND e.user_id = $2;
