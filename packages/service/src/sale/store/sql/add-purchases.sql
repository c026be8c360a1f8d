-- Adds confirmed units to each user's holding; the table's CHECK refuses anything over the limit.
-- (Units given back go through release-purchases.sql.)
-- $1 sale ids (bigint[]), $2 user ids (text[]), $3 quantities (int[]), $4 per-user limits (int[])
-- Returns nothing.
INSERT INTO purchases AS p (sale_id, user_id, quantity, per_user_limit)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::int[])
    ON CONFLICT (sale_id, user_id) DO UPDATE SET quantity = p.quantity + EXCLUDED.quantity;
