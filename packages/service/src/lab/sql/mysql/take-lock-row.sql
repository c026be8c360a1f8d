-- Takes the "insert lock": a unique row; a second holder's insert hits the primary key and is
-- ignored (INSERT IGNORE, MySQL's ON CONFLICT DO NOTHING).
-- $1 lock name, $2 holder
-- Returns nothing; affectedRows 1 when taken, 0 when someone holds it.
INSERT IGNORE INTO lab_locks (name, holder) VALUES ($1, $2)
