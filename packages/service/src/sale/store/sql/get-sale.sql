-- One sale with its persisted totals.
-- $1 sale id (bigint)
-- Returns zero or one row (id as text).
SELECT id::text AS id, name, stock, sold, per_user_limit, starts_at, ends_at, pay_within_seconds
  FROM sales
 WHERE id = $1;
