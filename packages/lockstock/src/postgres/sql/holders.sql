-- Who holds advisory locks on these keys right now, in this database, by mode (session- and
-- transaction-level alike). A bigint key is stored as classid = its high 32 bits, objid = its low
-- 32 bits, objsubid = 1.
-- $1 keys (bigint[])
-- Returns one row: exclusive, shared (counts of holding sessions), waiting (sessions in the lock's
-- queue, either mode).
SELECT count(*) FILTER (WHERE l.granted AND l.mode = 'ExclusiveLock') AS exclusive,
       count(*) FILTER (WHERE l.granted AND l.mode = 'ShareLock') AS shared,
       count(*) FILTER (WHERE NOT l.granted) AS waiting
  FROM pg_locks AS l
  JOIN unnest($1::bigint[]) AS k(key)
    ON l.classid = ((k.key >> 32) & 4294967295)::oid
   AND l.objid = (k.key & 4294967295)::oid
 WHERE l.locktype = 'advisory'
   AND l.objsubid = 1
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database());
