-- Decrements a run's stock only while a unit is left: the check and the write in one statement.
-- $1 run id
-- Returns nothing; affectedRows 1 when a unit was taken, 0 when sold out.
UPDATE lab_stock SET stock = stock - 1 WHERE run_id = $1 AND stock >= 1
