-- MySQL (no QUERY_ID in its process list): whether a connection waits for a user lock right now. The
-- KILL QUERY that follows (cancel-connection.sql) may then reach the next statement if the wait ended
-- in between; the statements after a wait retry once on ER_QUERY_INTERRUPTED for that reason.
-- ? 1 connection id
-- Returns a row (id) while that connection waits for a user lock; none otherwise.
SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID = ? AND STATE LIKE '%user lock%';
