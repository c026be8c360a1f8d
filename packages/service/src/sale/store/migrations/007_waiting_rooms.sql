-- Waiting rooms (sale/room/, README "Waiting room"): a first-come sale may make its buyers queue and
-- be admitted at a paced rate before they may buy. The room's settings are chosen once, when the sale
-- is created, in the transaction that inserts it; the record keeps them so that a sale Redis lost is
-- never sold without its room. Admission state (queue, admissions) lives in Redis only.
--
-- * `rate_per_sec`: buyers admitted per second, in total over every serve process.
-- * `pow_bits`: proof-of-work difficulty before a ticket (leading zero bits of SHA-256; 0: none).
-- * `ticket_seconds`, `admission_seconds`: how long a queue ticket, and an admission, is valid.
-- * `notice_seconds`: an admission is valid from this long after it is made, so that a buyer who asks
--   less often than a bot learns of it in time: admission order, not polling speed, is purchase order.
-- * `shuffle_seconds`: arrivals within one window of this length (and everyone before the sale
--   starts) are ordered at random, not by arrival, so a fast connection gains nothing inside it.

CREATE TABLE sale_rooms (
  sale_id           bigint           PRIMARY KEY REFERENCES sales (id),
  rate_per_sec      double precision NOT NULL CHECK (rate_per_sec > 0),
  pow_bits          smallint         NOT NULL DEFAULT 0 CHECK (pow_bits BETWEEN 0 AND 32),
  ticket_seconds    integer          NOT NULL CHECK (ticket_seconds >= 1),
  admission_seconds integer          NOT NULL CHECK (admission_seconds >= 1),
  shuffle_seconds   integer          NOT NULL CHECK (shuffle_seconds >= 1),
  notice_seconds    integer          NOT NULL DEFAULT 2 CHECK (notice_seconds >= 0)
);
