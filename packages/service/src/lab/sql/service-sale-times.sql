-- When each unit of a sale's confirmed orders was reserved (the Redis time of its stream entry), for
-- the lab's check that nobody was told "sold out" before a later sale.
-- $1 sale id
-- Returns rows {ms} (bigint as text).
SELECT (extract(epoch FROM reserved_at) * 1000)::bigint::text AS ms
  FROM orders
 WHERE sale_id = $1 AND status = 'confirmed'
