-- A sale's orders that were bought with an Idempotency-Key not older than the keys are remembered.
-- $1 sale id (bigint), $2 how long keys are remembered, seconds
-- Returns id (text), user_id, quantity, idempotency_key, seconds_left (int).
SELECT id::text AS id, user_id, quantity, idempotency_key,
       ceil(extract(epoch FROM reserved_at + make_interval(secs => $2) - now()))::int AS seconds_left
  FROM orders
 WHERE sale_id = $1
   AND idempotency_key IS NOT NULL
   AND reserved_at > now() - make_interval(secs => $2);
