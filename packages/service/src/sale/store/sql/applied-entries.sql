-- Which of these stream entries already have an order (redelivered entries must not apply twice),
-- and how those orders stand now (a redelivered confirmed order is opened for payment again).
-- $1 sale ids (bigint[]), $2 stream entry ids (text[]), pairwise
-- Returns sale_id (text), stream_id, status, pay_by.
SELECT o.sale_id::text AS sale_id, o.stream_id, o.status, o.pay_by
  FROM orders o
  JOIN unnest($1::bigint[], $2::text[]) AS e (sale_id, stream_id)
    ON o.sale_id = e.sale_id AND o.stream_id = e.stream_id;
