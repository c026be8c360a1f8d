-- The draw: every recorded entry's place, ordered by SHA-256(draw seed ‖ entry hash as bytes) (ties,
-- which SHA-256 does not produce, by the entry hash). The draw seed is the raffle's seed, or with a
-- beacon SHA-256(seed ‖ the round's randomness) (beacon.ts drawSeedOf): a pure function of public
-- data once drawn, so anyone recomputes it (raffle/verify.ts does, in its own code). The places are
-- written 1,024 to a row (migration 014: a million single rows with their indexes took 21 s, the
-- sort 2 s), each block with its first place's draw key (a buyer's block is found by their key).
-- Run once per raffle, under lock-draw.sql's lock, after draw-settings.sql (the sort of a million
-- keys fits in memory).
-- $1 sale id, $2 the draw seed (bytea, 32 bytes)
-- Returns one row: entries (the entries drawn).
WITH keyed AS (
  SELECT sha256($2::bytea || decode(e.entry_hash, 'hex')) AS k, e.entry_hash, e.user_id
    FROM raffle_entries e
   WHERE e.sale_id = $1
), placed AS (
  SELECT k, user_id, row_number() OVER (ORDER BY k, entry_hash) AS place FROM keyed
), blocks AS (
  INSERT INTO raffle_place_blocks (sale_id, block, first_key, user_ids)
  SELECT $1, (place - 1) / 1024, (array_agg(k ORDER BY place))[1], array_agg(user_id ORDER BY place)
    FROM placed
   GROUP BY (place - 1) / 1024
  RETURNING cardinality(user_ids) AS n
)
SELECT coalesce(sum(n), 0)::int AS entries FROM blocks;
