-- Marks a raffle drawn (in the draw's transaction, under lock-draw.sql's lock).
-- $1 sale id, $2 entries drawn
UPDATE raffles SET phase = 'drawn', drawn_at = now(), entries = $2 WHERE sale_id = $1 AND phase = 'entries';
