-- Ends a raffle's entry window now (an operator draws early); a drawn raffle is left as it is.
-- $1 sale id
-- Returns zero or one row: the raffle was in its entry window.
UPDATE raffles SET draw_at = least(draw_at, now()) WHERE sale_id = $1 AND phase = 'entries' RETURNING sale_id;
