-- MariaDB: the statement a connection runs while it waits for a user lock — only then, so a cancel
-- never hits another statement. Its QUERY_ID is what KILL QUERY ID ends (cancel-query.sql).
-- ? 1 connection id
-- Returns a row (query_id) while that connection waits for a user lock; none otherwise.
SELECT QUERY_ID AS query_id FROM information_schema.PROCESSLIST WHERE ID = ? AND STATE = 'User lock';
