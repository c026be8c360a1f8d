-- The draw: every recorded entry's place, ordered by SHA-256(draw seed ‖ entry hash as bytes) (ties,
-- which SHA-256 does not produce, by the entry hash). The draw seed is the raffle's seed, or with a
-- beacon SHA-256(seed ‖ the round's randomness) (beacon.ts drawSeedOf): a pure function of public
-- data once drawn, so anyone recomputes it (raffle/verify.ts does, in its own code). The places are
-- appended to raffle_places in place order (its primary key grows at its right edge); the entries are
-- not rewritten (migration 009). Run once per raffle, under lock-draw.sql's lock, after
-- draw-settings.sql (the sort of a million keys fits in memory).
-- $1 sale id, $2 the draw seed (bytea, 32 bytes)
-- Returns the row count (entries drawn).
INSERT INTO raffle_places (sale_id, place, user_id)
SELECT e.sale_id,
       row_number() OVER (ORDER BY sha256($2::bytea || decode(e.entry_hash, 'hex')), e.entry_hash),
       e.user_id
  FROM raffle_entries e
 WHERE e.sale_id = $1;
