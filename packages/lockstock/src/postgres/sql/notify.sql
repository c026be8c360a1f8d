-- Wakes a semaphore's waiters (delivered at commit): after a permit is given back in scope
-- 'transaction', and after forceUnlock ended holders' sessions.
-- $1 channel (text). Returns one row.
SELECT pg_notify($1::text, '') AS woken;
