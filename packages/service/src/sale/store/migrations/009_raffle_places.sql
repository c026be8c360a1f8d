-- Raffle draw places in a table of their own (sale/raffle/draw.ts, README "Raffle sales"): the draw
-- inserts every entrant's place, in place order, with one INSERT … SELECT row_number(), instead of
-- rewriting each raffle_entries row with its place (a million rows rewritten with their indexes took
-- 82 s; appending the places takes a fraction of it).
--
-- * `raffle_places`: one row per entrant of a drawn raffle, `place` 1 = first in the draw order. Rows
--   are written once, by the draw's transaction (under the raffle row's lock), and never updated.
--   No foreign keys to raffle_entries: the draw's rows come from raffle_entries in the same
--   statement, and a per-row key check would cost a million lookups.
-- * The waitlist reads it by place (primary key, appended in order by the draw); a buyer's status and
--   the waitlist's recovery read it by user (the unique index).
-- * `raffle_entries.position` goes: the places drawn before this migration move here.

CREATE TABLE raffle_places (
  sale_id bigint  NOT NULL REFERENCES raffles (sale_id),
  place   integer NOT NULL CHECK (place >= 1),
  user_id text    NOT NULL,
  PRIMARY KEY (sale_id, place),
  CONSTRAINT raffle_places_user UNIQUE (sale_id, user_id)
);

INSERT INTO raffle_places (sale_id, place, user_id)
SELECT sale_id, position, user_id FROM raffle_entries WHERE position IS NOT NULL;

DROP INDEX raffle_entries_order;
ALTER TABLE raffle_entries DROP COLUMN position;
