-- One raffle with what the record counts: entries, winners (entrants given a unit, whatever became of
-- their order), paid winners. The seed is returned only once drawn (the caller publishes it).
-- $1 sale id
-- Returns zero or one row: sale_id (text), seed_hash, seed (hex, null before the draw), phase,
--   draw_at, closes_at (committed), close (the signed close statement, null before the draw),
--   drawn_at, stock, ends_at, entries, winners, paid, beacon (jsonb, null: none), beacon_round (jsonb,
--   the round the draw used; null before it, or without a beacon).
SELECT r.sale_id::text AS sale_id, r.seed_hash,
       CASE WHEN r.phase = 'drawn' THEN encode(r.seed, 'hex') END AS seed,
       r.phase, r.draw_at, r.closes_at, r.close, r.drawn_at, s.stock, s.ends_at, r.beacon, r.beacon_round,
       (SELECT count(*)::int FROM raffle_entries e WHERE e.sale_id = r.sale_id) AS entries,
       o.winners, o.paid
  FROM raffles r
  JOIN sales s ON s.id = r.sale_id
 CROSS JOIN LATERAL (
       SELECT count(*)::int AS winners, count(*) FILTER (WHERE status = 'paid')::int AS paid
         FROM orders
        WHERE sale_id = r.sale_id) AS o
 WHERE r.sale_id = $1;
