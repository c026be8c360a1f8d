-- A buyer joins a sale's waitlist (waitlist.ts): a new place at the end of the line, recorded before
-- Redis ranks the buyer by it. Joining again (after leaving, or after an offer passed on) takes a new place.
-- $1 sale id (bigint)
-- $2 user id
-- Returns one row: seq (text), the place Redis scores the buyer by.
INSERT INTO sale_waitlist (sale_id, user_id, seq)
VALUES ($1, $2, nextval('sale_waitlist_seq'))
ON CONFLICT (sale_id, user_id)
DO UPDATE SET seq = EXCLUDED.seq, joined_at = now(), left_at = NULL
RETURNING seq::text AS seq;
