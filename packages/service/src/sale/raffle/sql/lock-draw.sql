-- The draw's fence: the raffle's row, locked until the draw commits (entry recorders wait), with its
-- phase and whether its entry window is over on the record's clock.
-- $1 sale id
-- Returns zero or one row: phase, due (boolean).
SELECT phase, draw_at <= now() AS due FROM raffles WHERE sale_id = $1 FOR UPDATE;
