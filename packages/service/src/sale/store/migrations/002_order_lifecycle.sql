-- The order lifecycle: a sale may give its buyers a payment window; a recorded order then moves from
-- confirmed to paid, cancelled or expired, exactly once. Redis decides each transition (its settle and
-- expire scripts); the order pipeline applies it here with a compare-and-set on the status, so a paid
-- order is never cancelled, a cancelled one never paid, and units are never returned twice.
-- `sales.sold` and `purchases.quantity` count units held by confirmed and paid orders: a cancelled or
-- expired order gives its units back, and the CHECKs of 001 keep fencing both.

ALTER TABLE sales ADD COLUMN pay_within_seconds integer CHECK (pay_within_seconds >= 1);

ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status
  CHECK (status IN ('confirmed', 'paid', 'cancelled', 'expired', 'rejected'));
-- the payment deadline (reservation time + the sale's window); null when the sale has no window
ALTER TABLE orders ADD COLUMN pay_by timestamptz;
-- when the order was paid, cancelled or expired (Redis time of the transition)
ALTER TABLE orders ADD COLUMN settled_at timestamptz;
ALTER TABLE orders ADD CONSTRAINT orders_settled
  CHECK ((status IN ('paid', 'cancelled', 'expired')) = (settled_at IS NOT NULL));

-- No query looks orders up by (sale, user) — per-user holdings live in `purchases` — and every
-- recorded order paid for this index on insert, the pipeline's costliest statement.
DROP INDEX orders_by_sale_user;
