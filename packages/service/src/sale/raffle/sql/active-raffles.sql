-- Raffles with work left: entries to record or a draw to run, or a waitlist to serve (sale not ended).
-- Returns rows: sale_id (text), phase, due (entry window over on the record's clock), starts_at,
--   draw_at, ends_at.
SELECT r.sale_id::text AS sale_id, r.phase, r.draw_at <= now() AS due,
       s.starts_at, r.draw_at, s.ends_at
  FROM raffles r
  JOIN sales s ON s.id = r.sale_id
 WHERE s.ends_at > now()
 ORDER BY r.sale_id;
