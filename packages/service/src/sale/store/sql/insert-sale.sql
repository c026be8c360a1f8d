-- Creates a sale.
-- $1 name (text), $2 stock (int), $3 starts_at (timestamptz), $4 ends_at (timestamptz), $5 per_user_limit (int),
-- $6 pay_within_seconds (int, null: no payment window)
-- Returns the new row (id as text).
INSERT INTO sales (name, stock, starts_at, ends_at, per_user_limit, pay_within_seconds)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id::text AS id, name, stock, per_user_limit, starts_at, ends_at, pay_within_seconds;
