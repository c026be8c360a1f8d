-- withTransactionLock: a transaction-level advisory lock inside the caller's own transaction, waited
-- for in PostgreSQL's lock queue, ended by its COMMIT or ROLLBACK. With a wait bound, lock_timeout is
-- set for the wait only and the caller's own value put back in the same statement (the client runs it
-- in a savepoint: at the timeout, rolling back to it restores everything). The token is drawn once the
-- lock is held; 0 without a sequence.
-- $1 key (bigint), $2 shared (boolean), $3 lock_timeout (ms, text; null: keep the caller's),
-- $4 sequence (regclass text; null: no token)
-- Returns one row: token (bigint). Fails with 55P03 at the timeout.
WITH previous AS MATERIALIZED (SELECT current_setting('lock_timeout') AS ms),
     timeout AS MATERIALIZED (
       SELECT set_config('lock_timeout', coalesce($3::text, previous.ms), true) AS ms FROM previous),
     locked AS MATERIALIZED (
       SELECT CASE WHEN $2::boolean THEN pg_advisory_xact_lock_shared($1::bigint)
                   ELSE pg_advisory_xact_lock($1::bigint) END AS done
         FROM timeout),
     restored AS MATERIALIZED (
       SELECT set_config('lock_timeout', previous.ms, true) AS ms FROM previous, locked)
SELECT CASE WHEN $4::text IS NULL THEN 0 ELSE nextval($4::regclass) END AS token FROM restored;
