-- Drops every session-level advisory lock of this session before its connection goes back to the
-- pool, after a wait that failed: a wait cancelled (or timed out) just after the server granted it
-- leaves the lock held — session-level advisory locks ignore the failed statement's rollback.
-- Returns one row.
SELECT pg_advisory_unlock_all() AS done;
