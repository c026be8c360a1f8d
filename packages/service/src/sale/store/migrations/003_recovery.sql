-- Recovery from the record (sale/recovery/): when Redis loses a sale or comes back older than the
-- record, the sale is rebuilt from these tables. Two things it needs were not kept:
-- * the Idempotency-Key of each order (the reservation script writes it into the stream entry), so a
--   client retrying an unknown outcome after the rebuild gets its original order, not a second one;
-- * a cheap way to find a sale's newest settlement (its Redis time is `settled_at`): with the newest
--   reservation (the inbox index orders_inbox) it is the record's high-water mark, which Redis's stream
--   must never be below.
ALTER TABLE orders ADD COLUMN idempotency_key text;

CREATE INDEX orders_settled ON orders (sale_id, settled_at) WHERE settled_at IS NOT NULL;
