-- A sale and its waiting room, if it has one.
-- $1 sale id (bigint)
-- Returns no row for no such sale; one row, its room columns null for a sale without a room.
SELECT s.starts_at, r.rate_per_sec, r.pow_bits, r.ticket_seconds, r.admission_seconds, r.shuffle_seconds,
       r.notice_seconds, r.max_active, r.max_backlog, r.paused
  FROM sales s
  LEFT JOIN sale_rooms r ON r.sale_id = s.id
 WHERE s.id = $1;
