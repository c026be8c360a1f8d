-- The unpaid orders of a sale that have a payment deadline, for reconciliation (Redis must schedule
-- each for expiry unless it settled it already).
-- $1 sale id (bigint)
-- Returns id (text), user_id, quantity, pay_by.
SELECT id::text AS id, user_id, quantity, pay_by
  FROM orders
 WHERE sale_id = $1 AND status = 'confirmed' AND pay_by IS NOT NULL
 ORDER BY id;
