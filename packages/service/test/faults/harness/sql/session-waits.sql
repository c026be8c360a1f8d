-- Whether one session is waiting for a lock (the harness's next hold on a sale, queued behind the
-- pipeline transactions already waiting).
-- $1  backend pid
SELECT coalesce(bool_or(wait_event_type = 'Lock'), false) AS waiting
FROM pg_stat_activity
WHERE pid = $1;
