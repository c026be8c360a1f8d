-- wait-lock.sql for scope 'transaction': waits in PostgreSQL's lock queue for a transaction-level
-- advisory lock inside the hold's open transaction. lock_timeout stays set for the rest of that
-- transaction (nothing else in it waits for a lock). A failure aborts the transaction: the client
-- then rolls it back and starts a new one for the next try.
-- $1 key (bigint), $2 shared (boolean), $3 sequence (regclass text), $4 lock_timeout (ms, text),
-- $5 owner label (text: the session's application_name, which deadlock-check.sql reads)
-- Returns one row: pid, token (bigint). Fails with 55P03 at the timeout, 57014 when cancelled.
WITH timeout AS MATERIALIZED (SELECT set_config('lock_timeout', $4::text, true) AS ms,
                                       set_config('application_name', $5::text, false) AS label),
     locked AS MATERIALIZED (
       SELECT CASE WHEN $2::boolean THEN pg_advisory_xact_lock_shared($1::bigint)
                   ELSE pg_advisory_xact_lock($1::bigint) END AS done
         FROM timeout)
SELECT pg_backend_pid() AS pid, nextval($3::regclass) AS token FROM locked;
