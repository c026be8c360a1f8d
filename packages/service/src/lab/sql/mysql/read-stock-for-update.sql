-- Reads a run's stock and row-locks it until the transaction ends (pessimistic locking). Under
-- InnoDB's default REPEATABLE READ this is a locking read of the latest committed row, not of the
-- transaction's snapshot.
-- $1 run id
-- Returns one row {stock}.
SELECT stock FROM lab_stock WHERE run_id = $1 FOR UPDATE
