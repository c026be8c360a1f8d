-- The last place served: the highest place of an entrant who holds an order, in the record or among
-- the reservations still in the orders stream ($2). The cursor goes back to the place after it.
-- (raffle_place(): one block lookup per such entrant, migration 014.)
-- $1 sale id, $2 user ids of the stream's reservations (text[])
-- Returns one row: last (0 if nobody was served).
SELECT coalesce(max(raffle_place($1, u.user_id)), 0)::int AS last
  FROM (SELECT user_id FROM orders WHERE sale_id = $1
        UNION
        SELECT unnest($2::text[])) AS u;
