-- Decrements a run's stock in SQL without a guard: no lost update, but it can go below zero.
-- $1 run id
-- Returns nothing.
UPDATE lab_stock SET stock = stock - 1 WHERE run_id = $1
