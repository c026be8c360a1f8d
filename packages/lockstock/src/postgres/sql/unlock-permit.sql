-- Gives a semaphore's permit back (session scope) and wakes the semaphore's waiters: the NOTIFY is
-- delivered when this statement's transaction commits, i.e. at once.
-- $1 permit key (bigint), $2 channel (text)
-- Returns one row: released (false: this session did not hold it), pid.
SELECT pg_advisory_unlock($1::bigint) AS released, pg_backend_pid() AS pid, pg_notify($2::text, '') AS woken;
