-- Locks the orders a batch of lifecycle events settles, in id order (after the sales: the same lock
-- order in every transaction), and returns how they stand.
-- $1 order ids (bigint[])
-- Returns id (text), sale_id (text), user_id, quantity, status.
SELECT id::text AS id, sale_id::text AS sale_id, user_id, quantity, status
  FROM orders
 WHERE id = ANY ($1::bigint[])
 ORDER BY id
   FOR UPDATE;
