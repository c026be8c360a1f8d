-- Writes a value only if the writer's fence is not stale (FencedStore rule, see fence.ts).
-- The row lock taken by ON CONFLICT makes check and write one atomic step.
-- Copy the WHERE clause into your own UPDATEs to fence any table.
-- $1 key (text), $2 value (jsonb), $3 fencing token (bigint), $4 owner (text)
-- Returns one row (key) if accepted, no row if rejected as stale.
INSERT INTO lockstock_fenced_values AS current (key, value, fence_token, fence_owner)
VALUES ($1, $2, $3, $4)
ON CONFLICT (key) DO UPDATE
   SET value = EXCLUDED.value,
       fence_token = EXCLUDED.fence_token,
       fence_owner = EXCLUDED.fence_owner,
       updated_at = now()
 WHERE current.fence_token < EXCLUDED.fence_token
    OR (current.fence_token = EXCLUDED.fence_token AND current.fence_owner = EXCLUDED.fence_owner)
RETURNING key;
