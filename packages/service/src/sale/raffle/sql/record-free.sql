-- What the record says a raffle sale can still give: its stock, units held (confirmed and paid
-- orders), and its orders of any state (every order of a raffle sale is a served entrant).
-- $1 sale id
-- Returns zero or one row: stock, sold, orders.
SELECT s.stock, s.sold, (SELECT count(*)::int FROM orders o WHERE o.sale_id = s.id) AS orders
  FROM sales s
 WHERE s.id = $1;
