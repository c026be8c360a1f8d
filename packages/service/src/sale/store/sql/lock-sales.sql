-- Locks the sales a batch of orders touches, in id order (so concurrent workers cannot deadlock),
-- for the rest of the transaction: the batch's decisions are made against these totals.
-- $1 sale ids (bigint[])
-- Returns id (text), stock, sold, per_user_limit, pay_within_seconds (null: no payment window).
SELECT id::text AS id, stock, sold, per_user_limit, pay_within_seconds
  FROM sales
 WHERE id = ANY ($1::bigint[])
 ORDER BY id
   FOR UPDATE;
