-- Waitlists of first-come sales (sale/waitlist/, docs/service.md "Waitlist"): a buyer told "sold out"
-- joins; units that come back go to the line in join order as time-limited offers. Redis keeps the
-- line and its offers (one script decides each unit); the record keeps every join, in the order Redis
-- ranks it, so that a Redis that lost the sale gets its line back with the stock (recovery/rebuild.ts,
-- SaleService.warm) instead of selling the returned units to whoever asks first.
--
-- * `seq`: the join's place; Redis scores the line by it. Joining again after leaving the line (or
--   after an offer passed on) takes a new, later place.
-- * `left_at`: the buyer left the line (or declined an offer). A buyer who bought since joining holds
--   an order reserved after `joined_at`: the rebuild leaves them out as well.

CREATE SEQUENCE sale_waitlist_seq;

CREATE TABLE sale_waitlist (
  sale_id   bigint      NOT NULL REFERENCES sales (id),
  user_id   text        NOT NULL,
  seq       bigint      NOT NULL,
  joined_at timestamptz NOT NULL DEFAULT now(),
  left_at   timestamptz,
  PRIMARY KEY (sale_id, user_id)
);

CREATE INDEX sale_waitlist_line ON sale_waitlist (sale_id, seq) WHERE left_at IS NULL;
