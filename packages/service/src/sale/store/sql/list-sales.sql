-- A page of sales, newest first (keyset paging by id), narrowed by their time window.
-- $1 before: only sales with a smaller id (bigint), or null for the first page
-- $2 window: 'scheduled' (not started), 'open' (started, not ended), 'ended', or null (all)
-- $3 limit: rows at most
-- Returns rows (id as text), id descending.
SELECT id::text AS id, name, stock, sold, per_user_limit, starts_at, ends_at, pay_within_seconds, part_tags, admission
  FROM sales
 WHERE ($1::bigint IS NULL OR id < $1::bigint)
   AND (
         $2::text IS NULL
      OR ($2 = 'scheduled' AND starts_at > now())
      OR ($2 = 'open' AND starts_at <= now() AND ends_at > now())
      OR ($2 = 'ended' AND ends_at <= now())
   )
 ORDER BY id DESC
 LIMIT $3;
