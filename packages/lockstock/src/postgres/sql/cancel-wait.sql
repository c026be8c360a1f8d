-- Cancels a waiter's blocked advisory-lock wait (wait-lock.sql) when it gave up — only while that
-- backend still waits for an advisory lock, so a late cancel cannot hit the next statement.
-- $1 pid (int)
-- Returns one row: cancelled (false: it was no longer waiting).
SELECT coalesce(bool_or(pg_cancel_backend(a.pid)), false) AS cancelled
  FROM pg_stat_activity AS a
 WHERE a.pid = $1::int
   AND a.wait_event_type = 'Lock'
   AND a.wait_event = 'advisory';
