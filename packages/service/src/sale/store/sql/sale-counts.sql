-- Per-sale totals of recorded orders, for reconciliation. "Confirmed" counts the orders that hold
-- units: confirmed (unpaid) and paid.
-- $1 sale id (bigint)
-- Returns confirmed_units, confirmed_orders, rejected_orders, buyers.
SELECT coalesce(sum(quantity) FILTER (WHERE status IN ('confirmed', 'paid')), 0)::int AS confirmed_units,
       count(*) FILTER (WHERE status IN ('confirmed', 'paid'))::int AS confirmed_orders,
       count(*) FILTER (WHERE status = 'rejected')::int AS rejected_orders,
       count(DISTINCT user_id) FILTER (WHERE status IN ('confirmed', 'paid'))::int AS buyers
  FROM orders
 WHERE sale_id = $1;
