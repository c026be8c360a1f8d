-- unlock.sql on a connection whose own application_name is known already (unlock.sql returned it on
-- the connection's first unlock): the same release, without reading pg_settings — a view that builds
-- every setting of the server per call, which cost PostgreSQL about four times a whole pair of the
-- floor (pgbench, 2026-12-07: 1,200 against 6,700 pairs/s with it, same machine and run).
-- $1 key (bigint), $2 shared (boolean), $3 label (text: the connection's own application_name,
-- pg_settings' reset_val for it, as unlock.sql returned it)
-- Returns one row: released (false: this session did not hold it — see unlock.sql), pid, label.
SELECT CASE WHEN $2::boolean THEN pg_advisory_unlock_shared($1::bigint)
            ELSE pg_advisory_unlock($1::bigint) END AS released,
       pg_backend_pid() AS pid,
       set_config('application_name', $3::text, false) AS label;
