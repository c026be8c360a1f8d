-- Units held by a part's recorded orders (confirmed and paid), for its rebuild.
-- $1 sale id (bigint), $2 part (smallint)
-- Returns sold (int).
SELECT coalesce(sum(quantity) FILTER (WHERE status IN ('confirmed', 'paid')), 0)::int AS sold
  FROM orders
 WHERE sale_id = $1 AND part = $2;
