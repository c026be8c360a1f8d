-- Extends an order pipeline's lease and reads the current recovery fence. Never recreates the row: a
-- rebuild deletes the row of a pipeline it fenced out, which must register again (between steps).
-- $1 consumer, $2 lease, ms
-- Returns fence (text): the current recovery fence; no row when the lease is gone.
UPDATE pipeline_leases
   SET expires_at = clock_timestamp() + $2::int * interval '1 millisecond'
 WHERE consumer = $1
RETURNING (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM recovery_fence)::text AS fence;
