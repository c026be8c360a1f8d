-- The draw's fence: the raffle's row, locked until the draw commits (entry recorders wait), with its
-- phase, whether its entry window is over on the record's clock, and its commitment (signing.ts).
-- $1 sale id
-- Returns zero or one row: phase, due (boolean), seed_hash, closes_at, now (the transaction's time:
--   the close statement's closedAt, as drawn_at).
SELECT phase, draw_at <= now() AS due, seed_hash, closes_at, now() AS now
  FROM raffles WHERE sale_id = $1 FOR UPDATE;
