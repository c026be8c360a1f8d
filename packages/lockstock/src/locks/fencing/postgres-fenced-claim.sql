-- Claims a key for a read-modify-write: records the caller's fence as the newest (FencedStore rule,
-- see fence.ts) so that an older holder's later write is rejected, and returns the value. A key never
-- written gets a row with a JSON null value. The row lock of ON CONFLICT makes check and claim atomic.
-- $1 key (text), $2 fencing token (bigint), $3 owner (text)
-- Returns one row (value) if granted, no row if a newer holder claimed or wrote before.
INSERT INTO lockstock_fenced_values AS current (key, value, fence_token, fence_owner)
VALUES ($1, 'null'::jsonb, $2, $3)
ON CONFLICT (key) DO UPDATE
   SET fence_token = EXCLUDED.fence_token,
       fence_owner = EXCLUDED.fence_owner
 WHERE current.fence_token < EXCLUDED.fence_token
    OR (current.fence_token = EXCLUDED.fence_token AND current.fence_owner = EXCLUDED.fence_owner)
RETURNING value;
