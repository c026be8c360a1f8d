-- A part's orders that reached a final state (paid, cancelled, expired), for its `settled` hash.
-- $1 sale id (bigint), $2 part (smallint)
-- Returns id (text), status.
SELECT id::text AS id, status
  FROM orders
 WHERE sale_id = $1 AND part = $2 AND settled_at IS NOT NULL;
