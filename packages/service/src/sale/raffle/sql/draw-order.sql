-- The draw: every recorded entry's place, ordered by SHA-256(seed ‖ entry hash as bytes) (ties, which
-- SHA-256 does not produce, by the entry hash). A pure function of the seed and the entries, so
-- anyone with both recomputes it (raffle/verify.ts does, in its own code).
-- $1 sale id
-- Returns the row count (entries drawn).
WITH ordered AS (
  SELECT e.user_id,
         row_number() OVER (ORDER BY sha256(r.seed || decode(e.entry_hash, 'hex')), e.entry_hash) AS place
    FROM raffle_entries e
    JOIN raffles r ON r.sale_id = e.sale_id
   WHERE e.sale_id = $1
)
UPDATE raffle_entries e
   SET position = o.place
  FROM ordered o
 WHERE e.sale_id = $1 AND e.user_id = o.user_id;
