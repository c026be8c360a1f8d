-- Sales whose orders may still arrive: not ended more than a day ago.
-- Returns rows (id as text).
SELECT id::text AS id, name, stock, sold, per_user_limit, starts_at, ends_at, pay_within_seconds, part_tags, admission
  FROM sales
 WHERE ends_at > now() - interval '1 day'
 ORDER BY id;
