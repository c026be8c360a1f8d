-- Marks a raffle drawn (in the draw's transaction, under lock-draw.sql's lock), with its signed close
-- statement (signing.ts: the commitment, the entries drawn and their Merkle root), the beacon round
-- the draw used (null: no beacon) and the draw seed the places were ordered by (buyers' places are
-- looked up by their draw key: migration 014).
-- $1 sale id, $2 entries drawn, $3 the close statement (jsonb), $4 the beacon round (jsonb, or null),
-- $5 the draw seed (bytea, 32 bytes)
-- Returns nothing (the caller read the phase under the same lock: the row is in 'entries' or 'closed').
UPDATE raffles SET phase = 'drawn', drawn_at = now(), entries = $2, close = $3, beacon_round = $4,
       draw_seed = $5
 WHERE sale_id = $1 AND phase IN ('entries', 'closed');
