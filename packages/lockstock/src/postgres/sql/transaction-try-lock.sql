-- withTransactionLock without waiting (waitMs 0): one try at a transaction-level advisory lock in the
-- caller's transaction; the token is drawn only once it is held (0 without a sequence).
-- $1 key (bigint), $2 shared (boolean), $3 sequence (regclass text; null: no token)
-- Returns one row: token (bigint; null when refused).
SELECT CASE WHEN CASE WHEN $2::boolean THEN pg_try_advisory_xact_lock_shared($1::bigint)
                      ELSE pg_try_advisory_xact_lock($1::bigint) END
            THEN CASE WHEN $3::text IS NULL THEN 0 ELSE nextval($3::regclass) END END AS token;
