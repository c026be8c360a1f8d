-- The draw: every recorded entry's place, ordered by SHA-256(seed ‖ entry hash as bytes) (ties, which
-- SHA-256 does not produce, by the entry hash). A pure function of the seed and the entries, so
-- anyone with both recomputes it (raffle/verify.ts does, in its own code). The places are appended to
-- raffle_places in the window's order, i.e. place order (its primary key grows at its right edge);
-- the entries are not rewritten (migration 009). Run once per raffle, under lock-draw.sql's lock.
-- $1 sale id
-- Returns the row count (entries drawn).
INSERT INTO raffle_places (sale_id, place, user_id)
SELECT e.sale_id,
       row_number() OVER (ORDER BY sha256(r.seed || decode(e.entry_hash, 'hex')), e.entry_hash),
       e.user_id
  FROM raffle_entries e
  JOIN raffles r ON r.sale_id = e.sale_id
 WHERE e.sale_id = $1;
