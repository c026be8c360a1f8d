-- MariaDB: the wait statement (wait-lock.sql, marked lockstock:wait) a connection runs, as soon as the
-- server has it — waiting already or about to. Its QUERY_ID is what KILL QUERY ID ends
-- (cancel-query.sql): exactly that statement, never a later one of the connection.
-- ? 1 connection id
-- Returns a row (query_id) while that connection runs its wait statement; none otherwise.
SELECT QUERY_ID AS query_id FROM information_schema.PROCESSLIST
 WHERE ID = ? AND COMMAND = 'Query' AND INFO LIKE '%lockstock:wait%';
