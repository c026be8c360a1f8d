-- One sale with its persisted totals.
-- $1 sale id (bigint)
-- Returns zero or one row (id as text; part_tags null for a sale of one part).
SELECT id::text AS id, name, stock, sold, per_user_limit, starts_at, ends_at, pay_within_seconds, part_tags, admission
  FROM sales
 WHERE id = $1;
