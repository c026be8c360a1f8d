-- One try at a session-level advisory lock (it lasts until unlocked or the session ends); on success
-- the fencing token is drawn after the lock is held, so tokens grow in the order the lock passes.
-- $1 key (bigint), $2 shared (boolean: the read side of a read-write lock), $3 sequence (regclass text),
-- $4 owner label (text: the session's application_name, which deadlock-check.sql reads)
-- Returns one row: pid (the server backend answering), token (bigint; null when refused).
SELECT pg_backend_pid() AS pid,
       set_config('application_name', $4::text, false) AS label,
       CASE WHEN CASE WHEN $2::boolean THEN pg_try_advisory_lock_shared($1::bigint)
                      ELSE pg_try_advisory_lock($1::bigint) END
            THEN nextval($3::regclass) END AS token;
