-- Releases one session-level advisory lock of this session (the client keeps re-entry counts itself:
-- the server holds each mode once per session). The session's owner label (application_name, set by
-- the tries) goes back to the connection's own, so a pooled connection names no owner it no longer
-- serves (deadlock-check.sql would read it as that owner's).
-- $1 key (bigint), $2 shared (boolean)
-- Returns one row: released (false: this session did not hold it — it was a different session, which
-- only a pooler swapping server connections explains), pid, label (the connection's own
-- application_name: kept for the connection, whose later unlocks run unlock-labelled.sql instead).
SELECT CASE WHEN $2::boolean THEN pg_advisory_unlock_shared($1::bigint)
            ELSE pg_advisory_unlock($1::bigint) END AS released,
       pg_backend_pid() AS pid,
       set_config('application_name',
                  (SELECT reset_val FROM pg_settings WHERE name = 'application_name'), false) AS label;
