-- Raffle sales (sale/raffle/, README "Raffle sales"): a sale created with admission 'raffle' takes one
-- entry per buyer during its entry window, then draws: the entrants are ordered by
-- SHA-256(seed ‖ entry hash), the first `stock` of them win one unit each, and units that come back
-- (cancelled, expired) go to the next entrants in that order (the waitlist).
--
-- * `sales.admission`: how buyers get units. A raffle sale is never sold by the purchase route.
-- * `raffles`: the seed, chosen at creation and kept secret until the draw (its SHA-256 is published
--   at once: the commitment), the draw time, and the phase. The draw is the one transition
--   entries → drawn, under the row's lock: however many serve processes race to run it, one does.
-- * `raffle_entries`: the record of the entries (recorded from the sale's entries stream, see
--   raffle/entries.ts); `entry_hash` = hex SHA-256("<sale id>:<user id>"), the id published for
--   privacy; `position` is the entrant's place in the draw order (1 = first), set by the draw.

ALTER TABLE sales ADD COLUMN admission text NOT NULL DEFAULT 'first_come'
  CONSTRAINT sales_admission CHECK (admission IN ('first_come', 'raffle'));

CREATE TABLE raffles (
  sale_id   bigint      PRIMARY KEY REFERENCES sales (id),
  seed      bytea       NOT NULL CHECK (octet_length(seed) = 32),
  seed_hash text        NOT NULL,                -- hex SHA-256 of the seed, published at creation
  draw_at   timestamptz NOT NULL,
  phase     text        NOT NULL DEFAULT 'entries' CHECK (phase IN ('entries', 'drawn')),
  entries   integer     CHECK (entries >= 0),    -- entries the draw ordered
  drawn_at  timestamptz,
  CONSTRAINT raffles_drawn CHECK ((phase = 'drawn') = (drawn_at IS NOT NULL AND entries IS NOT NULL))
);

CREATE TABLE raffle_entries (
  sale_id    bigint      NOT NULL REFERENCES raffles (sale_id),
  user_id    text        NOT NULL,
  entry_hash text        NOT NULL,
  entered_at timestamptz NOT NULL,               -- Redis time of the entry
  position   integer     CHECK (position >= 1),  -- set by the draw
  PRIMARY KEY (sale_id, user_id)
);

-- The waitlist is read in draw order; no two entrants share a place.
CREATE UNIQUE INDEX raffle_entries_order ON raffle_entries (sale_id, position) WHERE position IS NOT NULL;
