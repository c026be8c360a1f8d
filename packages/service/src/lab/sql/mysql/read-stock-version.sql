-- Reads a run's stock with its version, for a compare-and-set update (optimistic locking).
-- $1 run id
-- Returns one row {stock, version}.
SELECT stock, version FROM lab_stock WHERE run_id = $1
