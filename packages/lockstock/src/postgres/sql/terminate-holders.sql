-- forceUnlock: ends the sessions holding advisory locks on these keys (in the given mode, or any), so
-- their locks go with them and the holders' clients see their connections end. Needs the same role as
-- the holders, or pg_signal_backend. Never this session.
-- $1 keys (bigint[]), $2 mode ('ExclusiveLock' | 'ShareLock' | null for both)
-- Returns one row: terminated (sessions signalled).
SELECT count(*) FILTER (WHERE pg_terminate_backend(holder.pid)) AS terminated
  FROM (SELECT DISTINCT l.pid
          FROM pg_locks AS l
          JOIN unnest($1::bigint[]) AS k(key)
            ON l.classid = ((k.key >> 32) & 4294967295)::oid
           AND l.objid = (k.key & 4294967295)::oid
         WHERE l.locktype = 'advisory'
           AND l.objsubid = 1
           AND l.granted
           AND ($2::text IS NULL OR l.mode = $2::text)
           AND l.pid <> pg_backend_pid()
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS holder;
