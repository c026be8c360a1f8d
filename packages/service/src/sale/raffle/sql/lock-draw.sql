-- The draw's fence: the raffle's row, locked until the close or the draw commits (entry recorders
-- wait), with its phase, whether its entry window is over on the record's clock, its commitment
-- (signing.ts), its seed and beacon (beacon.ts), and the close statement once closed.
-- $1 sale id
-- Returns zero or one row: phase, due (boolean), seed_hash, seed (bytea), closes_at, beacon (jsonb,
--   null: none), close (jsonb, null before the close), now (the transaction's time: the close
--   statement's closedAt, as drawn_at).
SELECT phase, draw_at <= now() AS due, seed_hash, seed, closes_at, beacon, close, now() AS now
  FROM raffles WHERE sale_id = $1 FOR UPDATE;
