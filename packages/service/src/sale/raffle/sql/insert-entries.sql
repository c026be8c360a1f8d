-- Records entries read from the sale's entries stream; an entry recorded before (redelivered, or read
-- by two processes) changes nothing: one entry per buyer.
-- $1 sale id, $2 user ids (text[]), $3 entry hashes (text[]), $4 Redis times (bigint[], ms)
-- Returns the row count inserted.
INSERT INTO raffle_entries (sale_id, user_id, entry_hash, entered_at)
SELECT $1, t.user_id, t.entry_hash, to_timestamp(t.ms / 1000.0)
  FROM unnest($2::text[], $3::text[], $4::bigint[]) AS t(user_id, entry_hash, ms)
ON CONFLICT (sale_id, user_id) DO NOTHING;
