-- The fault checker's view of one sale's orders: every order the record holds, whatever its status.
-- $1  sale id
SELECT id::text AS id, user_id, quantity, status
FROM orders
WHERE sale_id = $1
ORDER BY id;
