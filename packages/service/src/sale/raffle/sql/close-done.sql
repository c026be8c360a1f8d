-- Marks a raffle closed (a beacon raffle, in the close's transaction under lock-draw.sql's lock): its
-- entry list is fixed by the signed close statement, which names the beacon round the draw waits for.
-- $1 sale id, $2 the close statement (jsonb)
-- Returns nothing (the caller read the phase under the same lock: the row is in 'entries').
UPDATE raffles SET phase = 'closed', close = $2 WHERE sale_id = $1 AND phase = 'entries';
