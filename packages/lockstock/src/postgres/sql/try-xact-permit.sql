-- try-permit.sql for scope 'transaction': the permit is a transaction-level advisory lock, held until
-- the hold's open transaction ends.
-- $1 permit keys (bigint[], in order), $2 sequence (regclass text)
-- Returns one row (pid, slot from 0, token) when a permit was taken; no row when all are held.
SELECT pg_backend_pid() AS pid, free.slot - 1 AS slot, nextval($2::regclass) AS token
  FROM (SELECT permit.slot
          FROM unnest($1::bigint[]) WITH ORDINALITY AS permit(key, slot)
         WHERE pg_try_advisory_xact_lock(permit.key)
         LIMIT 1) AS free;
