-- Settles orders: confirmed → paid, cancelled or expired. The compare-and-set on the status is the
-- fence: an order that is not confirmed any more is left as it is (and not returned).
-- $1 order ids (bigint[]), $2 new statuses (text[]), $3 settled at (timestamptz[])
-- Returns the ids settled now (as text).
UPDATE orders o
   SET status = s.status, settled_at = s.settled_at
  FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS s (id, status, settled_at)
 WHERE o.id = s.id
   AND o.id = ANY ($1::bigint[]) -- an index scan for the candidates, not a join over every order
   AND o.status = 'confirmed'
RETURNING o.id::text AS id;
