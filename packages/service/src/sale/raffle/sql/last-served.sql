-- The last place served: the highest place of an entrant who holds an order, in the record or among
-- the reservations still in the orders stream ($2). The cursor goes back to the place after it.
-- $1 sale id, $2 user ids of the stream's reservations (text[])
-- Returns one row: last (0 if nobody was served).
SELECT greatest(
         (SELECT coalesce(max(p.place), 0)
            FROM orders o
            JOIN raffle_places p ON p.sale_id = o.sale_id AND p.user_id = o.user_id
           WHERE o.sale_id = $1),
         (SELECT coalesce(max(place), 0)
            FROM raffle_places
           WHERE sale_id = $1 AND user_id = ANY ($2::text[]))
       )::int AS last;
