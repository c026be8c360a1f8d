-- An order pipeline ended a step that began after it had seen fence $2: nothing it read before that
-- is in its memory any more (recorded, or dropped and left pending in Redis).
-- $1 consumer, $2 fence (bigint)
-- Returns nothing (no row when the lease is gone).
UPDATE pipeline_leases
   SET drained_fence = greatest(drained_fence, $2::bigint)
 WHERE consumer = $1;
