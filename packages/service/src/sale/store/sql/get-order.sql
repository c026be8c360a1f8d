-- One order.
-- $1 order id (bigint)
-- Returns zero or one row (ids as text).
SELECT id::text AS id, sale_id::text AS sale_id, user_id, quantity, status, reject_reason, pay_by
  FROM orders
 WHERE id = $1;
