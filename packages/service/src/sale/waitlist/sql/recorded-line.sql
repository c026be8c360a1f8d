-- A sale's waitlist as the record has it, in join order (the rebuild and the warm put it back into
-- Redis): buyers who joined, did not leave, and hold no order reserved since they joined (an offer
-- bought is such an order).
-- $1 sale id (bigint)
-- Returns rows: user_id, seq (text), in line order.
SELECT w.user_id, w.seq::text AS seq
  FROM sale_waitlist w
 WHERE w.sale_id = $1
   AND w.left_at IS NULL
   AND NOT EXISTS (
         SELECT 1 FROM orders o
          WHERE o.sale_id = w.sale_id AND o.user_id = w.user_id AND o.reserved_at >= w.joined_at)
 ORDER BY w.seq;
