-- The settings the server check reads (PostgresBackend.checkServer, `lockstock doctor`): read-only.
-- idle_session_timeout exists from PostgreSQL 14 (NULL before); timeouts are in ms, 0 when off.
-- Returns one row: version_num (int), version (text), in_recovery (bool), synchronous_commit (text),
-- fsync (text),
-- idle_session_timeout (bigint | null), idle_in_transaction_session_timeout (bigint), pid (int).
SELECT current_setting('server_version_num')::int AS version_num,
       current_setting('server_version') AS version,
       pg_is_in_recovery() AS in_recovery,
       current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('fsync') AS fsync,
       (SELECT setting::bigint FROM pg_settings WHERE name = 'idle_session_timeout') AS idle_session_timeout,
       (SELECT setting::bigint FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout')
         AS idle_in_transaction_session_timeout,
       pg_backend_pid() AS pid;
