-- The next entrants in draw order, from a place on (the waitlist): the blocks holding places
-- $2 … $2 + $3 - 1 (1,024 places a block, migration 014), unnested.
-- $1 sale id, $2 first place, $3 how many at most
-- Returns rows: user_id, position, in draw order.
SELECT u.user_id, (b.block * 1024 + u.i)::integer AS position
  FROM raffle_place_blocks b, unnest(b.user_ids) WITH ORDINALITY AS u(user_id, i)
 WHERE b.sale_id = $1
   AND b.block BETWEEN ($2::integer - 1) / 1024 AND ($2::integer + $3::integer - 2) / 1024
   AND b.block * 1024 + u.i >= $2::integer
 ORDER BY b.block, u.i
 LIMIT $3;
