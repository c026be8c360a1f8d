-- Decrements a run's stock only if nobody changed it since it was read (version compare-and-set).
-- InnoDB's UPDATE reads the latest committed row whatever the isolation level, so the CAS holds.
-- $1 run id, $2 the version read
-- Returns nothing; affectedRows 1 when the CAS won, 0 when another buyer got there first.
UPDATE lab_stock SET stock = stock - 1, version = version + 1 WHERE run_id = $1 AND version = $2
