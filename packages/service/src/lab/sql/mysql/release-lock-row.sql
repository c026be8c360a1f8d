-- Releases the "insert lock", only if the caller holds it.
-- $1 lock name, $2 holder
-- Returns nothing.
DELETE FROM lab_locks WHERE name = $1 AND holder = $2
