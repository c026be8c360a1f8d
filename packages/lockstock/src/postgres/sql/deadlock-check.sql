-- Looks for a cycle of lock owners through the advisory-lock wait of one waiting session. PostgreSQL's
-- own detector cannot see it: lockstock holds each lock of an owner on a session of its own, and the
-- server only follows a waiting session to the sessions holding what it waits for (an idle holder ends
-- the path). Each lockstock session names its owner in application_name ('lockstock <tag>', set by
-- every try and wait), so the graph is read at the level of owners: owner W -> owner H when a session
-- of W waits for an advisory lock a session of H holds (pg_blocking_pids). Called only for a wait that
-- has lasted the server's deadlock_timeout (pg_blocking_pids takes the lock manager's locks briefly).
-- $1 pid (int: the waiting session's backend), $2 owner label (text: that session's label)
-- Returns one row: cycle (text[]: the labels from $2 round to $2, e.g. {a,b,a}; null: no cycle).
WITH RECURSIVE
  edges AS MATERIALIZED (
    SELECT DISTINCT w.application_name AS waiter, h.application_name AS holder
      FROM pg_stat_activity AS w
      CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS b(pid)
      JOIN pg_stat_activity AS h ON h.pid = b.pid
     WHERE w.wait_event_type = 'Lock' AND w.wait_event = 'advisory'
       AND w.application_name LIKE 'lockstock %' AND h.application_name LIKE 'lockstock %'),
  first AS (
    SELECT DISTINCT h.application_name AS holder
      FROM unnest(pg_blocking_pids($1::int)) AS b(pid)
      JOIN pg_stat_activity AS h ON h.pid = b.pid
     WHERE h.application_name LIKE 'lockstock %'),
  paths (owner, path) AS (
    SELECT holder, ARRAY[$2::text, holder] FROM first
    UNION ALL
    SELECT e.holder, p.path || e.holder
      FROM paths AS p JOIN edges AS e ON e.waiter = p.owner
     WHERE p.owner <> $2::text AND NOT e.holder = ANY (p.path[2:]))
SELECT (SELECT path FROM paths WHERE owner = $2::text ORDER BY cardinality(path) LIMIT 1) AS cycle;
