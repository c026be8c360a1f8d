-- Marks a raffle drawn (in the draw's transaction, under lock-draw.sql's lock), with its signed close
-- statement (signing.ts: the commitment, the entries drawn and their Merkle root).
-- $1 sale id, $2 entries drawn, $3 the close statement (jsonb)
UPDATE raffles SET phase = 'drawn', drawn_at = now(), entries = $2, close = $3
 WHERE sale_id = $1 AND phase = 'entries';
