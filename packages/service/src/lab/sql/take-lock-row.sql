-- Takes the "insert lock": a unique row; a second holder's insert conflicts and does nothing.
-- $1 lock name, $2 holder
-- Returns nothing; rowCount 1 when taken, 0 when someone holds it.
INSERT INTO lab_locks (name, holder) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING
