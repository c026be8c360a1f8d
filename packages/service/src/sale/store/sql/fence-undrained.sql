-- The pipelines that have not drained fence $1, locked against their batches (a batch in progress
-- holds its row FOR KEY SHARE: the caller's lock_timeout ends the wait, and the row counts as not
-- drained).
-- $1 fence (bigint)
-- Returns consumer, live (boolean: the lease has not lapsed).
SELECT consumer, expires_at > clock_timestamp() AS live
  FROM pipeline_leases
 WHERE drained_fence < $1::bigint
 ORDER BY consumer
   FOR UPDATE;
