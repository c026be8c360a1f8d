-- Holds a sale's row lock for the rest of the harness's transaction: the pipeline's next batch for
-- that sale (store/sql/lock-sales.sql takes the same lock) waits on it, inside its own transaction.
-- $1  sale id
SELECT id
FROM sales
WHERE id = $1
FOR UPDATE;
