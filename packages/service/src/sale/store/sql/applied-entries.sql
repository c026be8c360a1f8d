-- Which of these stream entries already have an order (redelivered entries must not apply twice),
-- and how those orders stand now (a redelivered confirmed order is opened for payment again).
-- A lateral lookup per entry: probes of the inbox index, never a scan of all orders (LIMIT 1, which
-- the inbox makes true anyway, keeps the planner from turning it back into a join).
-- $1 sale ids (bigint[]), $2 stream entry ids (text[]), pairwise
-- Returns sale_id (text), stream_id, status, pay_by.
SELECT o.sale_id::text AS sale_id, o.stream_id, o.status, o.pay_by
  FROM unnest($1::bigint[], $2::text[]) AS e (sale_id, stream_id)
 CROSS JOIN LATERAL (
       SELECT sale_id, stream_id, status, pay_by
         FROM orders
        WHERE sale_id = e.sale_id AND stream_id = e.stream_id
        LIMIT 1) AS o;
