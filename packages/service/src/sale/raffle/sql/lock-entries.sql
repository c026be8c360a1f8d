-- Whether entries may still be recorded, holding the raffle's row against the draw until commit (the
-- draw takes it FOR UPDATE: an entry is recorded before the draw, or not at all).
-- $1 sale id
-- Returns zero or one row: phase.
SELECT phase FROM raffles WHERE sale_id = $1 FOR SHARE;
