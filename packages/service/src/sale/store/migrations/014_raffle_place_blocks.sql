-- Raffle draw places in blocks (sale/raffle/draw.ts, docs/benchmarks.md "Raffle draw"): a draw of a
-- million entries spent 21 of its 26 s inserting a million raffle_places rows with their two indexes
-- (the place key, and the user key of buyers' status lookups); the sort itself took 2 s. The places
-- are now written as 1,024 to a row, in place order: a thousand rows for a million entries.
--
-- * `raffle_place_blocks`: block b holds places b × 1,024 + 1 … (b + 1) × 1,024, in place order
--   (`user_ids[i]` is at place b × 1,024 + i). Written once, by the draw's transaction, never updated.
--   The size 1,024 is part of the format: every reader here and in sale/raffle/sql/ uses it.
-- * `first_key`: the draw key, SHA-256(draw seed ‖ entry hash), of the block's first place. A buyer's
--   place is found without a per-user index: their key (from their entry hash and the draw seed) picks
--   the block (the last whose first key is not above it), then their position in it (raffle_place()).
--   Two entries share a key only if SHA-256 collides.
-- * `raffles.draw_seed`: the seed the draw ordered by (the seed, or with a beacon SHA-256(seed ‖ the
--   round's randomness), beacon.ts drawSeedOf), set with the places.
-- * `raffle_places` becomes a view of the blocks with the old shape (sale_id, place, user_id), for
--   operators and tests; the service's queries read the blocks.

ALTER TABLE raffles ADD COLUMN draw_seed bytea CHECK (octet_length(draw_seed) = 32);
UPDATE raffles
   SET draw_seed = CASE WHEN beacon_round IS NULL THEN seed
                        ELSE sha256(seed || sha256(decode(beacon_round ->> 'signature', 'hex'))) END
 WHERE phase = 'drawn';

CREATE TABLE raffle_place_blocks (
  sale_id   bigint  NOT NULL REFERENCES raffles (sale_id),
  block     integer NOT NULL CHECK (block >= 0),
  first_key bytea   NOT NULL,
  user_ids  text[]  NOT NULL CHECK (cardinality(user_ids) BETWEEN 1 AND 1024),
  PRIMARY KEY (sale_id, block)
);
CREATE INDEX raffle_place_blocks_key ON raffle_place_blocks (sale_id, first_key);

INSERT INTO raffle_place_blocks (sale_id, block, first_key, user_ids)
SELECT p.sale_id, (p.place - 1) / 1024,
       (array_agg(sha256(r.draw_seed || decode(e.entry_hash, 'hex')) ORDER BY p.place))[1],
       array_agg(p.user_id ORDER BY p.place)
  FROM raffle_places p
  JOIN raffles r ON r.sale_id = p.sale_id
  JOIN raffle_entries e ON e.sale_id = p.sale_id AND e.user_id = p.user_id
 GROUP BY p.sale_id, (p.place - 1) / 1024;

DROP TABLE raffle_places;

CREATE VIEW raffle_places (sale_id, place, user_id) AS
SELECT b.sale_id, (b.block * 1024 + u.i)::integer, u.user_id
  FROM raffle_place_blocks b, unnest(b.user_ids) WITH ORDINALITY AS u(user_id, i);

-- A buyer's place in a drawn raffle (null: not drawn, or not an entrant): the block their draw key
-- falls in, then their position in it. One index probe and one block read.
CREATE FUNCTION raffle_place(p_sale bigint, p_user text) RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT b.block * 1024 + array_position(b.user_ids, p_user)
    FROM raffles r
    JOIN raffle_entries e ON e.sale_id = r.sale_id AND e.user_id = p_user
    CROSS JOIN LATERAL (
          SELECT block, user_ids FROM raffle_place_blocks
           WHERE sale_id = r.sale_id
             AND first_key <= sha256(r.draw_seed || decode(e.entry_hash, 'hex'))
           ORDER BY first_key DESC
           LIMIT 1) AS b
   WHERE r.sale_id = p_sale
$$;
