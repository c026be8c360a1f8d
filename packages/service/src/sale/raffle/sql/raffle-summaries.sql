-- The dashboard's raffle lines: for the sales given, those that are raffles, with what the record
-- counts (as get-raffle.sql, without the seed).
-- $1 sale ids (bigint[])
-- Returns rows: sale_id (text), phase, due (entry window over on the record's clock), ends_at,
--   entries, winners, paid.
SELECT r.sale_id::text AS sale_id, r.phase, r.draw_at <= now() AS due, s.ends_at,
       (SELECT count(*)::int FROM raffle_entries e WHERE e.sale_id = r.sale_id) AS entries,
       o.winners, o.paid
  FROM raffles r
  JOIN sales s ON s.id = r.sale_id
 CROSS JOIN LATERAL (
       SELECT count(*)::int AS winners, count(*) FILTER (WHERE status = 'paid')::int AS paid
         FROM orders
        WHERE sale_id = r.sale_id) AS o
 WHERE r.sale_id = ANY ($1::bigint[]);
