-- Waits in PostgreSQL's lock queue for a session-level advisory lock: no polling, and a holder whose
-- session ends (released, crashed, terminated) hands the lock to the first waiter at once. The wait is
-- bounded by lock_timeout, set for this statement's transaction only (set_config local), so a wait
-- nobody cancels still ends; the client then simply waits again. The MATERIALIZED CTEs fix the order:
-- timeout first, then the lock, then the token (drawn once held: tokens grow in lock order).
-- $1 key (bigint), $2 shared (boolean), $3 sequence (regclass text), $4 lock_timeout (ms, text),
-- $5 owner label (text: the session's application_name, which deadlock-check.sql reads)
-- Returns one row: pid, token (bigint). Fails with 55P03 (lock_not_available) at the timeout, 57014
-- (query_canceled) when the waiter gave up and cancelled it (cancel-wait.sql).
WITH timeout AS MATERIALIZED (SELECT set_config('lock_timeout', $4::text, true) AS ms,
                                       set_config('application_name', $5::text, false) AS label),
     locked AS MATERIALIZED (
       SELECT CASE WHEN $2::boolean THEN pg_advisory_lock_shared($1::bigint)
                   ELSE pg_advisory_lock($1::bigint) END AS done
         FROM timeout)
SELECT pg_backend_pid() AS pid, nextval($3::regclass) AS token FROM locked;
