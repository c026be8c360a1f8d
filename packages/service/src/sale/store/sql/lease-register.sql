-- Registers (or registers again) an order pipeline's lease, between steps: it holds no entry, so it
-- has drained every fence up to the current one. A row a rebuild fenced keeps its `fenced_below`.
-- $1 consumer, $2 lease, ms
-- Returns fence (text): the current recovery fence (0: no rebuild yet).
WITH fence AS (
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS value FROM recovery_fence
)
INSERT INTO pipeline_leases AS l (consumer, expires_at, drained_fence)
SELECT $1, clock_timestamp() + $2::int * interval '1 millisecond', fence.value FROM fence
    ON CONFLICT (consumer) DO UPDATE
   SET expires_at = excluded.expires_at,
       drained_fence = greatest(l.drained_fence, excluded.drained_fence)
RETURNING (SELECT value::text FROM fence) AS fence;
