-- Pauses or resumes a sale's waiting room (the operator's switch).
-- $1 sale id (bigint), $2 paused (boolean)
-- Returns one row {sale_id} if the sale has a room; none otherwise.
UPDATE sale_rooms SET paused = $2 WHERE sale_id = $1 RETURNING sale_id;
