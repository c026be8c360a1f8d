-- How the record's database syncs commits, as it reports it (PostgreSQL or PGlite).
-- No parameters.
-- Returns one row: fsync ('on' | 'off'), sync (synchronous_commit: 'on', 'off', 'local', ...).
SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sync;
