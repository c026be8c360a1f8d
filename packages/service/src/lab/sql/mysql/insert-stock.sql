-- Puts a run's stock on sale.
-- $1 run id, $2 units
-- Returns nothing.
INSERT INTO lab_stock (run_id, stock) VALUES ($1, $2)
