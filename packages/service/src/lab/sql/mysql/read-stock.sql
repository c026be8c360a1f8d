-- Reads a run's stock (the read of the seeds' read-check-write; nothing holds it afterwards).
-- $1 run id
-- Returns one row {stock}.
SELECT stock FROM lab_stock WHERE run_id = $1
