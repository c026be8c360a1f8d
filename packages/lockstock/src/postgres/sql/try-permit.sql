-- One try at a semaphore's permit: the first free one of its permit keys, as a session-level advisory
-- lock. LIMIT 1 over the ordered scan stops at the first key locked, so at most one is taken. The
-- fencing token is drawn once the permit is held.
-- $1 permit keys (bigint[], in order), $2 sequence (regclass text)
-- Returns one row (pid, slot: the permit's index from 0, token) when a permit was taken; no row when
-- every permit is held.
SELECT pg_backend_pid() AS pid, free.slot - 1 AS slot, nextval($2::regclass) AS token
  FROM (SELECT permit.slot
          FROM unnest($1::bigint[]) WITH ORDINALITY AS permit(key, slot)
         WHERE pg_try_advisory_lock(permit.key)
         LIMIT 1) AS free;
