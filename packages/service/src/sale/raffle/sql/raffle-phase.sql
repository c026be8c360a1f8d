-- A raffle's phase, and whether its entry window is over on the record's clock (no lock).
-- $1 sale id
-- Returns zero or one row: phase, due (boolean), starts_at, draw_at.
SELECT r.phase, r.draw_at <= now() AS due, s.starts_at, r.draw_at
  FROM raffles r
  JOIN sales s ON s.id = r.sale_id
 WHERE r.sale_id = $1;
