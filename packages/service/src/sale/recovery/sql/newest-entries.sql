-- The newest stream entries the record holds for a sale: recovery compares them with Redis's stream.
-- Reservations by their stream entry id, from the inbox index: ids are "<ms>-<seq>" with 13-digit
-- milliseconds (until the year 2286), so whatever the collation, every id from the millisecond $2 on
-- compares >= $2 and every earlier one below it; the caller compares the returned ids exactly.
-- Settlements by their Redis time (settled_at is the ms of their stream entry), from orders_settled.
-- $1 sale id (bigint), $2 the millisecond part of the id to compare with (text; '0': all, newest first)
-- Returns newer (text[]: at most 1000 ids, newest first), last_settled_ms (text, null: none).
SELECT ARRAY(SELECT stream_id
               FROM orders
              WHERE sale_id = $1 AND stream_id >= $2
              ORDER BY stream_id DESC
              LIMIT 1000) AS newer,
       (SELECT (extract(epoch FROM max(settled_at)) * 1000)::bigint::text
          FROM orders
         WHERE sale_id = $1 AND settled_at IS NOT NULL) AS last_settled_ms;
