-- The benchmark's bulk load (bench/sale/raffle.ts): n recorded entries of users bench-1 … bench-n,
-- each with its real entry hash (hex SHA-256 of "<sale id>:<user id>"), as the recorder would write.
-- $1 sale id, $2 n
-- Returns nothing.
INSERT INTO raffle_entries (sale_id, user_id, entry_hash, entered_at)
SELECT $1::bigint, 'bench-' || i, encode(sha256(convert_to($1::bigint::text || ':bench-' || i, 'UTF8')), 'hex'), now()
  FROM generate_series(1, $2::int) AS i;
