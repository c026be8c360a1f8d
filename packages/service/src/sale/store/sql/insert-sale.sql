-- Creates a sale, and for a raffle sale its raffle (migrations/008_raffles.sql) in the same statement.
-- $1 name (text), $2 stock (int), $3 starts_at (timestamptz), $4 ends_at (timestamptz), $5 per_user_limit (int),
-- $6 pay_within_seconds (int, null: no payment window), $7 admission ('first_come' or 'raffle'),
-- $8 the raffle's seed (bytea), $9 its SHA-256 (hex), $10 its draw_at (timestamptz), also its committed
-- closes_at; null for a first-come sale; $11 its beacon (jsonb, raffle/beacon.ts; null: none)
-- Returns the new row (id as text).
WITH sale AS (
  INSERT INTO sales (name, stock, starts_at, ends_at, per_user_limit, pay_within_seconds, admission)
  VALUES ($1, $2, $3, $4, $5, $6, $7)
  RETURNING id, name, stock, per_user_limit, starts_at, ends_at, pay_within_seconds, admission
), raffle AS (
  INSERT INTO raffles (sale_id, seed, seed_hash, draw_at, closes_at, beacon)
  SELECT id, $8::bytea, $9::text, $10::timestamptz, $10::timestamptz, $11::jsonb FROM sale WHERE $7 = 'raffle'
)
SELECT id::text AS id, name, stock, per_user_limit, starts_at, ends_at, pay_within_seconds, admission FROM sale;
