-- Overwrites a run's stock with a value computed in memory (the lost update when unguarded).
-- $1 run id, $2 the new stock
-- Returns nothing.
UPDATE lab_stock SET stock = $2 WHERE run_id = $1
