-- The server's deadlock_timeout: how long a wait lasts before PostgreSQL looks for a deadlock, and
-- before lockstock looks for a cycle of owners (deadlock-check.sql).
-- Returns one row: ms (int).
SELECT setting::int AS ms FROM pg_settings WHERE name = 'deadlock_timeout';
