-- Waiting rooms that know their capacity (sale/room/, README "Waiting room"):
--
-- * `max_active`: at most this many buyers admitted and not yet done (neither bought nor lapsed) at
--   once, over every serve process; 0: no cap (the pace alone).
-- * `max_backlog`: admissions pause while the order pipeline has more than this many of the sale's
--   reservations not yet recorded; 0: off.
-- * `paused`: the operator's switch; a paused room admits nobody (its queue keeps its order). Kept in
--   the record so that a room Redis lost comes back paused if it was.

ALTER TABLE sale_rooms
  ADD COLUMN max_active  integer NOT NULL DEFAULT 0 CHECK (max_active >= 0),
  ADD COLUMN max_backlog integer NOT NULL DEFAULT 0 CHECK (max_backlog >= 0),
  ADD COLUMN paused      boolean NOT NULL DEFAULT false;
