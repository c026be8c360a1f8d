-- The dashboard's view of the record: the newest sales that have not ended more than a day ago, with
-- their recorded orders by status and their buyers (users holding at least one unit).
-- $1 how many sales at most (int)
-- "Confirmed" counts the orders that hold units: confirmed (unpaid) and paid. Cancelled and expired
-- orders gave their units back to the sale (read in the same pass over the sale's orders).
-- Returns rows, newest first (id as text): id, name, stock, sold (units held by confirmed orders),
--   per_user_limit, starts_at, ends_at, pay_within_seconds, part_tags, confirmed_orders,
--   rejected_orders, cancelled_units, expired_units, buyers.
SELECT s.id::text AS id, s.name, s.stock, s.sold, s.per_user_limit, s.starts_at, s.ends_at,
       s.pay_within_seconds, s.part_tags, o.confirmed_orders, o.rejected_orders,
       o.cancelled_units, o.expired_units, p.buyers
  FROM (SELECT *
          FROM sales
         WHERE ends_at > now() - interval '1 day'
         ORDER BY id DESC
         LIMIT $1) AS s
 CROSS JOIN LATERAL (
       SELECT count(*) FILTER (WHERE status IN ('confirmed', 'paid'))::int AS confirmed_orders,
              count(*) FILTER (WHERE status = 'rejected')::int AS rejected_orders,
              coalesce(sum(quantity) FILTER (WHERE status = 'cancelled'), 0)::int AS cancelled_units,
              coalesce(sum(quantity) FILTER (WHERE status = 'expired'), 0)::int AS expired_units
         FROM orders
        WHERE sale_id = s.id) AS o
 CROSS JOIN LATERAL (
       SELECT count(*)::int AS buyers
         FROM purchases
        WHERE sale_id = s.id AND quantity > 0) AS p
 ORDER BY s.id DESC;
