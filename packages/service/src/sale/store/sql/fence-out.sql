-- A rebuild goes ahead without some pipelines (locked by the caller), so that none of them records a
-- batch of a step that began before fence $1: a lapsed lease's row is deleted (its pipeline registers
-- again between steps), a live one's `fenced_below` is raised. One clock reading for both, so every
-- row is one or the other.
-- $1 fence (bigint), $2 consumers (text[])
-- Returns nothing.
WITH clock AS (SELECT clock_timestamp() AS t),
gone AS (
  DELETE FROM pipeline_leases l
   USING clock
   WHERE l.consumer = ANY ($2::text[]) AND l.expires_at <= clock.t
)
UPDATE pipeline_leases l
   SET fenced_below = greatest(l.fenced_below, $1::bigint)
  FROM clock
 WHERE l.consumer = ANY ($2::text[]) AND l.expires_at > clock.t;
