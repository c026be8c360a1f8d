-- Sessions other than this one waiting for a lock: a pipeline transaction blocked on the sale row.
SELECT count(*)::int AS waiting
FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid();
