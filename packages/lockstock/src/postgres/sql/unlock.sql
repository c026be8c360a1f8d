-- Releases one session-level advisory lock of this session (the client keeps re-entry counts itself:
-- the server holds each mode once per session).
-- $1 key (bigint), $2 shared (boolean)
-- Returns one row: released (false: this session did not hold it — it was a different session, which
-- only a pooler swapping server connections explains), pid.
SELECT CASE WHEN $2::boolean THEN pg_advisory_unlock_shared($1::bigint)
            ELSE pg_advisory_unlock($1::bigint) END AS released,
       pg_backend_pid() AS pid;
