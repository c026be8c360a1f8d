-- The newest stream entries the record holds for a sale: recovery compares them with Redis's stream.
-- Reservations by their stream entry id, from the inbox index, newest first by text order: ids are
-- "<ms>-<seq>" with 13-digit milliseconds (until the year 2286), so the newest millisecond's ids come
-- first whatever the collation (not in sequence order: '5-10' sorts below '5-9'), and the caller
-- compares the returned ids exactly — exact while a sale has at most 1,000 entries in one millisecond.
-- Settlements by their Redis time (settled_at is the ms of their stream entry), from orders_settled.
-- $1 sale id (bigint)
-- Returns newest_ids (text[]: at most 1000 ids), last_settled_ms (text, null: none).
SELECT ARRAY(SELECT stream_id
               FROM orders
              WHERE sale_id = $1
              ORDER BY stream_id DESC
              LIMIT 1000) AS newest_ids,
       (SELECT (extract(epoch FROM max(settled_at)) * 1000)::bigint::text
          FROM orders
         WHERE sale_id = $1 AND settled_at IS NOT NULL) AS last_settled_ms;
