-- The next entrants in draw order, from a place on (the waitlist).
-- $1 sale id, $2 first place, $3 how many at most
-- Returns rows: user_id, position, in draw order.
SELECT user_id, place AS position
  FROM raffle_places
 WHERE sale_id = $1 AND place >= $2
 ORDER BY place
 LIMIT $3;
