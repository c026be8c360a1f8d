-- A sale's orders that reached a final state (paid, cancelled, expired), for its `settled` hash.
-- $1 sale id (bigint)
-- Returns id (text), status.
SELECT id::text AS id, status
  FROM orders
 WHERE sale_id = $1 AND settled_at IS NOT NULL;
